// SchedulePlan: the executor's input for one engine step, as plain data — the executor contract.
// Built by Scheduler::step(), read (const&) by any Executor, which must:
//  1. perform `transfers` in order (host <-> device page and checkpoint copies, restores of hit
//     checkpoints into live slots), before any computation;
//  2. for each ScheduledSeq, start from a zero live state when begin == 0, else from its live
//     slot; compute tokens [begin, end) reading the MLA latents of positions [0, begin) from
//     `pages` and writing those of [begin, end) into them; write the KDA state after each
//     `checkpoints[i].position` into device checkpoint slot `checkpoints[i].slot`;
//  3. sample one token per entry with `samples`, in plan order, with its `sampling` params.
// Spans and pointers refer to scheduler- and cache-owned data and stay valid until
// Scheduler::apply() of this plan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/cache_transfer.h"
#include "sched/request.h"

namespace ds {

struct ScheduledSeq {
  RequestId request_id = 0;
  int64_t seq = -1;                 // cache sequence (diagnostics; executors use the ids below)
  int64_t begin = 0;                // first token position computed this step
  int64_t end = 0;                  // one past the last; end - begin tokens computed
  std::span<const int32_t> tokens;  // ids of positions [begin, end)
  // Device page ids backing positions [0, end): page i holds [i·P, (i+1)·P) (P = plan.page_tokens).
  // Pages before begin / P are read only; the sequence writes from page begin / P on.
  std::span<const int32_t> pages;
  int32_t live_slot = -1;                      // device live-state slot (KDA conv + S, all layers)
  std::vector<PlannedCheckpoint> checkpoints;  // states to write, positions in (begin, end]
  CheckpointRef restore_from;                  // first step after a hit: the checkpoint copied into live_slot
                                               // (by a restore transfer in plan.transfers), else invalid
  int64_t host_load_bytes = 0;               // lower tier -> device before computing (hit pages + checkpoint)
  double host_load_s = 0;                    // the cache's estimate of that transfer (tier bandwidth)
  bool samples = false;                      // end reaches the sequence's last token: sample one token
  const SamplingParams* sampling = nullptr;  // the request's parameters (set when samples)

  int64_t n_tokens() const { return end - begin; }
  int64_t first_new_page(int64_t page_tokens) const { return begin / page_tokens; }
};

struct SchedulePlan {
  int64_t step_index = 0;
  int64_t page_tokens = 64;              // KV page size of the cache
  std::vector<ScheduledSeq> seqs;        // running first (admission order), then newly admitted
  std::vector<CacheTransfer> transfers;  // copies to perform first, in order (may be non-empty
                                         // even when seqs is empty)
  int64_t n_scheduled_tokens = 0;        // sum of seqs[i].n_tokens() <= the step token budget
  std::vector<RequestId> admitted;       // admitted to the cache in this step
  std::vector<RequestId> preempted;      // released for recompute in this step

  bool empty() const { return seqs.empty(); }
};

}  // namespace ds
