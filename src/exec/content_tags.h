// ContentTags: what every page and state slot of an executor holds, as the token ids written into
// each page and (n_tokens, running hash of the tokens) per live and checkpoint slot — moved along
// by the same transfers as the data. Before a sequence computes, the tags prove that its live slot
// holds the state of exactly the prefix its pages hold; a wrong page id, a missed or misordered
// transfer, a wrong restore or a slot reused too early throws instead of silently producing wrong
// tokens. Used by the model executor when asked to verify (tests) and by the model-free test
// executor. Cost: page_tokens ids per page, 16 bytes per slot, one hash per prefix token per step.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sched/schedule_plan.h"

namespace ds {

class ContentTags {
 public:
  struct State {
    int64_t n_tokens = -1;  // -1: never written
    uint64_t hash = 0;      // running hash of the tokens consumed
  };

  static uint64_t mix(uint64_t hash, int32_t token);

  // Moves the tags of one transfer (perform transfers in plan order).
  void apply(const CacheTransfer& t);
  // Checks the sequence's live slot against its pages (prefix [0, begin), or a fresh state when
  // begin == 0), then records tokens [begin, end) into its pages and live slot and the planned
  // checkpoints. Throws ds::Error naming the request on any mismatch.
  void step(const ScheduledSeq& s, int64_t page_tokens);
  const State& live(int32_t slot) const;

 private:
  std::vector<int32_t>& page(int tier, int32_t id, int64_t page_tokens);
  State& slot(std::unordered_map<int32_t, State>& m, int32_t id, const char* what);

  std::unordered_map<int32_t, std::vector<int32_t>> pages_[2];  // [tier] page -> token ids
  std::unordered_map<int32_t, State> ckpts_[2];                 // [tier] checkpoint slot -> state
  std::unordered_map<int32_t, State> live_;                     // live slot -> state
};

}  // namespace ds
