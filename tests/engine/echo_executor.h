// EchoExecutor: a model-free executor for engine tests. It keeps only ContentTags (pages hold token
// ids, states are running hashes — so a wrong page, a missed transfer, a wrong restore or a reused
// slot throws) and samples each token as a function of the hash of the whole prefix, so a cold run
// of the same tokens gives the same outputs only if everything was right.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hash.h"
#include "exec/content_tags.h"
#include "exec/executor.h"

namespace ds::test {

inline int32_t echo_token(uint64_t prefix_hash, int32_t vocab) {
  return static_cast<int32_t>(splitmix64(prefix_hash) % static_cast<uint64_t>(vocab));
}

// The outputs a cold run gives: greedy continuation of `tokens` for n tokens.
inline std::vector<int32_t> echo_cold(std::vector<int32_t> tokens, int64_t n, int32_t vocab) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = 0;
    for (int32_t t : tokens) h = ContentTags::mix(h, t);
    out.push_back(echo_token(h, vocab));
    tokens.push_back(out.back());
  }
  return out;
}

class EchoExecutor final : public Executor {
 public:
  explicit EchoExecutor(int32_t vocab = 1000) : vocab_(vocab) {}

  StepResult execute(const SchedulePlan& plan) override {
    for (const CacheTransfer& t : plan.transfers) {
      tags_.apply(t);
      ++n_transfers_[static_cast<int>(t.kind)];
    }
    StepResult r;
    for (const ScheduledSeq& s : plan.seqs) {
      tags_.step(s, plan.page_tokens);
      if (s.samples) r.sampled_tokens.push_back(echo_token(tags_.live(s.live_slot).hash, vocab_));
    }
    r.duration_s = 1e-3 * static_cast<double>(plan.seqs.size());
    return r;
  }

  int64_t n_transfers(TransferKind k) const { return n_transfers_[static_cast<int>(k)]; }

 private:
  int32_t vocab_;
  ContentTags tags_;
  int64_t n_transfers_[3] = {};
};

}  // namespace ds::test
