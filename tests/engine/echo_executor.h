// EchoExecutor: a model-free executor that checks the executor contract of a SchedulePlan. Its
// "KV pages" hold the token ids of their positions, its "KDA state" (live and checkpoint slots) is
// (n_tokens, running hash of the tokens), and each sampled token is a function of the hash of the
// whole prefix. Before computing it re-reads the prefix through the page table and checks it against
// the live state, so a wrong page id, a missed transfer, a wrong restore or a reused slot throws —
// and a cold run of the same tokens gives the same outputs only if everything was right.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/check.h"
#include "core/hash.h"
#include "exec/executor.h"

namespace ds::test {

struct EchoState {
  int64_t n_tokens = -1;  // -1: never written
  uint64_t hash = 0;
};

inline uint64_t echo_mix(uint64_t h, int32_t token) {
  return splitmix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x51ed27ull));
}
inline int32_t echo_token(uint64_t prefix_hash, int32_t vocab) {
  return static_cast<int32_t>(splitmix64(prefix_hash) % static_cast<uint64_t>(vocab));
}

// The outputs a cold run gives: greedy continuation of `prompt` for n tokens.
inline std::vector<int32_t> echo_cold(std::vector<int32_t> tokens, int64_t n, int32_t vocab) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = 0;
    for (int32_t t : tokens) h = echo_mix(h, t);
    out.push_back(echo_token(h, vocab));
    tokens.push_back(out.back());
  }
  return out;
}

class EchoExecutor final : public Executor {
 public:
  explicit EchoExecutor(int32_t vocab = 1000) : vocab_(vocab) {}

  StepResult execute(const SchedulePlan& plan) override {
    const int64_t P = plan.page_tokens;
    for (const CacheTransfer& t : plan.transfers) {
      switch (t.kind) {
        case TransferKind::Page:
          page(t.dst_tier, t.dst, P) = page(t.src_tier, t.src, P);
          break;
        case TransferKind::Checkpoint:
          ckpt(t.dst_tier, t.dst) = ckpt(t.src_tier, t.src);
          break;
        case TransferKind::Restore:
          live(t.dst) = ckpt(t.src_tier, t.src);
          break;
      }
      ++n_transfers_[static_cast<int>(t.kind)];
    }
    StepResult r;
    for (const ScheduledSeq& s : plan.seqs) {
      EchoState& st = live(s.live_slot);
      if (s.begin == 0) st = EchoState{0, 0};
      DS_CHECK(st.n_tokens == s.begin, "echo: request {} live slot {} holds {} tokens, step begins at {}",
               s.request_id, s.live_slot, st.n_tokens, s.begin);
      DS_CHECK(static_cast<int64_t>(s.pages.size()) * P >= s.end,
               "echo: request {} has {} pages for {} tokens", s.request_id, s.pages.size(), s.end);
      uint64_t h = 0;  // the prefix as the pages hold it must be the prefix the live state consumed
      for (int64_t p = 0; p < s.begin; ++p) h = echo_mix(h, page(0, s.pages[p / P], P)[p % P]);
      DS_CHECK(h == st.hash, "echo: request {} pages disagree with its live state at {} tokens", s.request_id,
               s.begin);
      size_t c = 0;
      for (int64_t p = s.begin; p < s.end; ++p) {
        const int32_t tok = s.tokens[p - s.begin];
        page(0, s.pages[p / P], P)[p % P] = tok;
        st.hash = echo_mix(st.hash, tok);
        st.n_tokens = p + 1;
        for (; c < s.checkpoints.size() && s.checkpoints[c].position == p + 1; ++c)
          ckpt(0, s.checkpoints[c].slot) = st;
      }
      DS_CHECK(c == s.checkpoints.size(), "echo: request {} checkpoint positions outside ({}, {}]",
               s.request_id, s.begin, s.end);
      if (s.samples) r.sampled_tokens.push_back(echo_token(st.hash, vocab_));
      n_tokens_ += s.n_tokens();
    }
    r.duration_s = 1e-3 * static_cast<double>(plan.seqs.size());
    return r;
  }

  int64_t n_transfers(TransferKind k) const { return n_transfers_[static_cast<int>(k)]; }
  int64_t n_tokens() const { return n_tokens_; }

 private:
  std::vector<int32_t>& page(int tier, int32_t id, int64_t P) {
    DS_CHECK(id >= 0, "echo: page id {} in tier {}", id, tier);
    auto& v = pages_[tier][id];
    if (v.empty()) v.assign(static_cast<size_t>(P), -1);
    return v;
  }
  EchoState& ckpt(int tier, int32_t slot) {
    DS_CHECK(slot >= 0, "echo: checkpoint slot {} in tier {}", slot, tier);
    return ckpts_[tier][slot];
  }
  EchoState& live(int32_t slot) {
    DS_CHECK(slot >= 0, "echo: live slot {}", slot);
    return live_[slot];
  }

  int32_t vocab_;
  std::map<int32_t, std::vector<int32_t>> pages_[2];
  std::map<int32_t, EchoState> ckpts_[2];
  std::map<int32_t, EchoState> live_;
  int64_t n_transfers_[3] = {};
  int64_t n_tokens_ = 0;
};

}  // namespace ds::test
