// SchedulePlan: the executor's input for one engine step, as plain data — which token ranges of
// which sequences to compute, where to emit KDA checkpoints, which cached checkpoint to restore and
// how many bytes a lower-tier hit must move first. Built by Scheduler::step(), read (const&) by
// any Executor. Spans point into scheduler-owned requests and stay valid until Scheduler::apply().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/request.h"

namespace ds {

struct ScheduledSeq {
  RequestId request_id = 0;
  int64_t seq = -1;                           // cache sequence (page table, live-state slot)
  int64_t begin = 0;                          // first token position computed this step
  int64_t end = 0;                            // one past the last; end - begin tokens computed
  std::span<const int32_t> tokens;            // ids of positions [begin, end)
  std::vector<int64_t> checkpoint_positions;  // emit the KDA state after these positions (in (begin, end])
  bool restore_checkpoint = false;            // copy the hit checkpoint at `begin` into the live slot first
  int64_t host_load_bytes = 0;  // lower tier -> device before computing (hit pages + checkpoint)
  double host_load_s = 0;       // the cache's estimate of that transfer (tier bandwidth)
  bool samples = false;         // end reaches the sequence's last token: sample one token

  int64_t n_tokens() const { return end - begin; }
};

struct SchedulePlan {
  int64_t step_index = 0;
  std::vector<ScheduledSeq> seqs;    // running first (admission order), then newly admitted
  int64_t n_scheduled_tokens = 0;    // sum of seqs[i].n_tokens() <= the step token budget
  std::vector<RequestId> admitted;   // admitted to the cache in this step
  std::vector<RequestId> preempted;  // released for recompute in this step

  bool empty() const { return seqs.empty(); }
};

}  // namespace ds
