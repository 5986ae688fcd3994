// Trace replay: sends a trace's turns into the Engine (real Scheduler and HybridCache) at their
// times — on the simulated executor with a virtual clock, or on any Executor and Clock. Closed loop (agentic
// sessions at a fixed concurrency: a lane sends its next turn think_time after the previous one finished;
// lanes start at a random point of their first session with a warm-up request excluded from stats, like
// InferenceX AgentX) or open loop (requests at their trace timestamps, e.g. Mooncake). One run = one
// RunMetrics; a sweep runs configs on worker threads, each run deterministic for its seed whatever the thread
// count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cache/cache_config.h"
#include "engine/engine.h"
#include "exec/sim_executor.h"
#include "plan/cost_model.h"
#include "replay/agentx_harness.h"
#include "replay/run_metrics.h"
#include "sched/scheduler.h"
#include "trace/trace.h"

namespace ds {

struct ReplayConfig {
  std::string label = "hbm";    // name of the cache configuration in reports
  int concurrency = 1;          // closed loop: number of lanes (>= 1); ignored open loop
  uint64_t seed = 1;            // session order, lane start points, fake tokens
  double duration_s = 0;        // virtual seconds; the run stops there. 0 = until the trace ends:
                                // each session is used once (else lanes wrap around, re-salted)
  double max_think_s = 10;      // cap on a turn's think time (AgentX idle-gap cap)
  bool warmup = true;           // closed loop: lanes start mid-session with one warm-up request
  double start_frac_lo = 0.25;  // lane start point: uniform fraction of its session's turns
  double start_frac_hi = 0.75;
  int64_t max_requests = 0;       // stop sending after this many requests (0 = no limit)
  int gpus = 8;                   // for per-GPU throughput
  int64_t max_output_tokens = 0;  // cap on each turn's output length (0 = the trace's length)
  int32_t vocab_size = 0;         // > 0: token ids are taken modulo this (a real model's vocabulary)
  uint64_t token_salt = 0;        // != 0: every prompt is re-salted, so runs against one live server
                                  // share no prefixes with earlier runs
  int64_t kv_budget_tokens = 0;   // reported only (the cache config holds the bytes)
  // Decoded tokens are the ids the chain's next prompt holds at those positions (when it extends
  // this one; a partial last block keeps this prompt's ids), so KV and states after decoding can
  // hit the next turn. Off: decoded tokens are the executor's own (hash-id harnesses such as
  // AgentX resend the recorded conversation, not the model's output).
  bool live_output = false;
  double gpu_hour_usd = 0;  // > 0: $ per million input / output tokens in RunMetrics
  // AgentX harness (agentx_harness.h) instead of the lanes above: sub-agent branches, snapshot and
  // cache warm-up, a profiling window with cool-down. duration_s, max_think_s, warmup and the
  // start fractions above are then unused (AgentxOptions holds its own).
  bool agentx = false;
  AgentxOptions agentx_options;
  SchedulerConfig scheduler;
  CacheConfig cache;
  SimExecutorConfig executor;
};

// Replays `trace` once on the simulated executor and a virtual clock. Throws ds::Error on an
// invalid config. `cost` is read-only (shareable).
RunMetrics run_replay(const Trace& trace, const CostModel& cost, const ReplayConfig& config);
// Replays `trace` once on `executor`, keeping time on `clock` (e.g. the model executor and a wall
// clock). config.executor is not used.
RunMetrics run_replay(const Trace& trace, Executor& executor, Clock& clock, const ReplayConfig& config);

// Runs every config on up to `threads` threads; results in config order. `on_done(i)` (optional)
// is called after run i finishes, from the worker thread.
std::vector<RunMetrics> run_sweep(const Trace& trace, const CostModel& cost,
                                  const std::vector<ReplayConfig>& configs, int threads,
                                  const std::function<void(size_t)>& on_done = {});

}  // namespace ds
