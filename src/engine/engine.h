// Engine: the only event loop of deltaserve. It owns the Scheduler and the HybridCache, drives an
// Executor one step at a time (plan -> execute -> apply) and keeps time on a Clock (virtual for the
// simulator and reproducible replays, wall for serving). Callers (replay, generate, the server)
// add requests, step, and read per-request events: sampled tokens, finished, aborted, rejected.
// Single-threaded: every call comes from one thread, between steps.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/cache_config.h"
#include "cache/hybrid_cache.h"
#include "engine/clock.h"
#include "exec/executor.h"
#include "sched/scheduler.h"

namespace ds {

struct EngineConfig {
  SchedulerConfig scheduler;
  CacheConfig cache;
  bool check_invariants = false;  // HybridCache::check_invariants() after every step (tests; slow)
};

// What one Engine::step() produced.
struct EngineEvents {
  double now_s = 0;                     // clock after the step
  bool executed = false;                // a plan with sequences ran on the executor
  double step_s = 0;                    // that step's duration as the executor reported it
  int64_t n_scheduled_tokens = 0;       // tokens computed by the step
  std::vector<SampledToken> tokens;     // sampled this step, in plan order
  std::vector<TokenLogprobs> logprobs;  // empty, or one per entry of `tokens` (see StepResult)
  std::vector<RequestId> admitted;      // admitted to the cache by this step (at now_s - step_s)
  std::vector<RequestId> first_token;   // requests whose first output token is among `tokens`
  std::vector<Request> finished;        // max_output_tokens reached or a stop token sampled
  std::vector<Request> aborted;         // cancelled by abort() since the previous step
  std::vector<Request> rejected;        // can never fit in the cache, even alone (status aborted)
};

class Engine {
 public:
  // `executor` and `clock` must outlive the engine. Throws ds::Error on a bad cache config.
  Engine(const EngineConfig& config, Executor& executor, Clock& clock);

  // Queues a request (see Scheduler::add for the checks).
  void add(Request request);
  // Cancels a waiting or running request: its cache sequence and slots are released now; the
  // request comes back in the next step()'s `aborted`. false when the id is not queued or running.
  bool abort(RequestId id);

  // One scheduling decision and its execution. When nothing is runnable the plan may still carry
  // transfers (executed, no time charged to sequences) or rejections; `executed` is then false.
  EngineEvents step();

  // Nothing queued or running, and no event left to hand out.
  bool idle() const;
  double now_s() const { return clock_.now_s(); }
  Clock& clock() { return clock_; }
  const HybridCache& cache() const { return cache_; }
  const Scheduler& scheduler() const { return sched_; }
  int64_t n_steps() const { return n_steps_; }

 private:
  HybridCache cache_;
  Scheduler sched_;
  Executor& exec_;
  Clock& clock_;
  bool check_invariants_ = false;
  std::vector<Request> aborted_;
  int64_t n_steps_ = 0;
};

}  // namespace ds
