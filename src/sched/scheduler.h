// Scheduler: continuous batching with chunked prefill under a per-step token budget, admission and
// growth through the HybridCache (match -> admit, reserve as the request grows, preempt by
// recompute when reserve fails), checkpoints at the retention policy's positions, commit after each
// chunk, finish at the end. Owns the requests; invariants: a request is in exactly one of waiting /
// running; every running request holds exactly one cache sequence; a step never exceeds the token
// budget or max_running. Shared unchanged by the real engine and the simulator (no timing here).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "cache/hybrid_cache.h"
#include "sched/request.h"
#include "sched/schedule_plan.h"

namespace ds {

struct SchedulerConfig {
  int64_t max_step_tokens = 8192;  // token budget per step: prefill chunks + one per decode
  int max_running = 256;           // running (admitted) sequences at most
  // true: a step mixes decodes and prefill chunks (vLLM). false: prefill first (SGLang): a step is
  // all prefill (unfinished chunked prefills, then admissions) while any prefill can run, and all
  // decode otherwise.
  bool mixed_batches = true;
  // true: admission reserves cache room for the whole remaining prompt, not only its first chunk
  // (vLLM's scheduler_reserve_full_isl, on by default since v0.19), so chunked prefills cannot be
  // over-admitted and then preempted; a request that does not fit waits at the head of the queue.
  bool reserve_full_prompt = false;
};

// One sampled token of one request.
struct SampledToken {
  RequestId request_id = 0;
  int32_t token = 0;
  int64_t index = 0;  // 0 for the request's first output token
};

// What one executed step changed, for the caller's clocks and metrics.
struct StepEvents {
  std::vector<SampledToken> tokens;    // in plan order
  std::vector<RequestId> first_token;  // requests that sampled their first output token
  std::vector<Request> finished;       // completed requests (moved out of the scheduler)
  std::vector<Request> rejected;       // can never fit in the cache even alone (status aborted;
                                       // rejected mid-prefill/decode keeps its counters)
};

// What vLLM's prefix-cache counters would count (vllm/v1/metrics/stats.py PrefixCacheStats, recorded
// by KVCacheManager.get_computed_blocks): every lookup of a waiting request at the head of the
// queue, admitted or not — so a request that waits is counted at every attempt —, its tokens as
// queries and its device / lower-tier hit tokens. Requests preempted before are counted apart
// (vLLM keeps them out of its Prometheus vllm:prefix_cache_* counters).
struct LookupStats {
  int64_t lookups = 0, queries = 0, hits = 0, external_hits = 0;
  int64_t preempted_lookups = 0, preempted_queries = 0, preempted_hits = 0, preempted_external_hits = 0;
};

class Scheduler {
 public:
  // `cache` must outlive the scheduler; the scheduler is its only user of admit/reserve/commit.
  Scheduler(const SchedulerConfig& config, HybridCache& cache);

  // Queues a request (status waiting, nothing computed). Throws ds::Error on an empty prompt,
  // max_output_tokens < 1 or bad sampling parameters.
  void add(Request request);

  // Cancels a waiting or running request (releasing its cache sequence) and returns it with status
  // aborted; nullopt when no such request is queued or running. Not between step() and apply().
  std::optional<Request> abort(RequestId id);

  // One scheduling decision: schedule_running (preempt_if_needed on reserve failure),
  // admit_waiting, build_plan. An empty plan means nothing can run now.
  SchedulePlan step();

  // Applies the executed plan (must be the plan of the last step()): advances n_computed_tokens,
  // appends sampled tokens (one per `samples` entry, in plan order), commits to the cache, and
  // finishes requests that reached max_output_tokens or sampled a stop token.
  StepEvents apply(const SchedulePlan& plan, std::span<const int32_t> sampled_tokens);

  int64_t n_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t n_running() const { return static_cast<int64_t>(running_.size()); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t n_preemptions() const { return n_preemptions_; }
  const LookupStats& lookup_stats() const { return lookups_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  struct Slot {  // a running request and its per-step choice
    std::unique_ptr<Request> req;
    int64_t seq = -1;
    int64_t n_new = 0;           // tokens scheduled this step (0 = not scheduled)
    bool just_admitted = false;  // first step after admission (restore / host load)
    int64_t host_load_bytes = 0;
    double host_load_s = 0;
    CheckpointRef restore_from;  // the hit checkpoint, until the first step ran
  };

  enum class Phase : uint8_t { all, prefill, decode };
  void schedule_running(SchedulePlan& plan, int64_t& budget, Phase phase);
  bool preempt_if_needed(size_t index, int64_t n_total);  // false: slot `index` itself preempted
  void preempt_last();
  void admit_waiting(SchedulePlan& plan, int64_t& budget);
  bool admit_one(Request& req, Slot& slot);
  void build_plan(SchedulePlan& plan);
  void reject_head();
  void reject_last_running();

  SchedulerConfig config_;
  HybridCache& cache_;
  int64_t page_tokens_ = 64;
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<Slot> running_;
  std::vector<Request> rejected_;  // handed out by the next apply()
  std::vector<RequestId> pending_preempted_;
  int64_t step_index_ = 0;
  int64_t applied_step_ = 0;
  int64_t n_preemptions_ = 0;
  LookupStats lookups_;
};

}  // namespace ds
