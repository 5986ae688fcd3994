// RunMetrics: the results of one replay run (one concurrency point of one cache configuration),
// as plain data, plus the statistics helpers that produce them. Rates are fractions in [0, 1];
// times are virtual seconds. Units are in the names: `_tok_s_total` is tokens per second of the
// whole node (what harnesses quote as "output tok/s"), `_tok_s_per_gpu` divides that by the GPUs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ds {

struct RunMetrics {
  // What ran.
  std::string label;                       // config name shown in tables ("hbm", "hbm+dram", ...)
  int concurrency = 0;                     // closed loop: lanes; open loop: 0
  std::string retention;                   // e.g. "interval:32768"
  std::string eviction;                    // e.g. "leaf-lru"
  std::string tiers;                       // e.g. "hbm" or "hbm,dram"
  std::string cache_model = "deltaserve";  // deltaserve | vllm | sglang (emulated caches)
  std::string harness = "default";         // default | bench | agentx
  int gpus = 0;
  int64_t kv_budget_tokens = 0;  // device tier budget in MLA-KV tokens

  // Cache effectiveness over measured (non-warm-up) requests.
  double theoretical_hit_rate = 0;                 // infinite page-granular cache over the replayed stream
  double realized_hit_rate = 0;                    // restorable prefix tokens / prompt tokens
  double kv_reachable_rate = 0;                    // KV-reachable prefix tokens / prompt tokens (>= realized)
  std::map<std::string, double> hit_rate_by_tier;  // tier name -> hit tokens / prompt tokens
  int64_t n_prompt_tokens = 0;
  int64_t n_hit_tokens = 0;  // state-reachable (restorable) tokens
  int64_t n_kv_reachable_tokens = 0;
  int64_t n_theoretical_hit_tokens = 0;
  // Upper bound on the hit rate of ANY policy with this memory budget on this run's request
  // timeline (offline_bound.h says why it is one); realized <= bound <= theoretical.
  double offline_bound_hit_rate = 0;
  double checkpoint_bytes_per_hit_token = 0;  // checkpoint bytes written in the window / hit tokens
  // The same window as vLLM's Prometheus counters see it (Scheduler::lookup_stats): hits / queries
  // over every lookup of a waiting request, re-lookups of a waiting request included; "device" is
  // vllm:prefix_cache_hits / queries, "external" the connector's (host tier) hits / queries; both
  // leave requests preempted before out, as vLLM does; the last one keeps them in.
  double vllm_device_hit_rate = 0;
  double vllm_external_hit_rate = 0;
  double vllm_hit_rate_with_preempted = 0;
  int64_t n_lookups = 0;

  // Latency and throughput. TTFT percentiles include requests still without a first token at the
  // end of the run, censored at that time (n_ttft_censored of them), so a stalled run looks slow.
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;
  double tpot_p50_s = 0;
  double interactivity_tok_s = 0;   // 1 / tpot_p50_s (per-user decode speed)
  double output_tok_s_total = 0;    // output tokens produced in the window / window, whole node
  double output_tok_s_per_gpu = 0;  // output_tok_s_total / gpus
  double total_tok_s_per_gpu = 0;   // (prompt + output tokens of the measured requests) / window / gpus
  double window_s = 0;              // measurement window (virtual seconds)
  double elapsed_virtual_s = 0;     // whole run incl. warm-up
  int64_t n_ttft_censored = 0;      // measured requests without a first token when the run ended
  // GPU cost of the window at ReplayConfig::gpu_hour_usd, split between input (prompt tokens of the
  // measured requests) and output tokens at the market's 1 : 5 ratio (economics.h token_prices).
  double usd_per_m_input_tokens = 0, usd_per_m_output_tokens = 0;
  std::map<std::string, double> time_breakdown_s;  // simulated step time by part (cost model), whole run

  // Work and memory.
  int64_t n_requests = 0;  // measured requests completed
  int64_t n_warmup_requests = 0;
  int64_t n_rejected = 0;       // requests that could never fit in the cache
  int64_t n_errors = 0;         // endpoint replay: requests that failed (HTTP error, broken stream)
  std::string first_error;      // the first failure's message, for the report
  int64_t n_output_tokens = 0;  // measured
  int64_t n_steps = 0;
  int64_t n_preemptions = 0;
  int64_t checkpoints_created = 0;
  int64_t checkpoints_dropped = 0;
  // Path holding (boundary-aware eviction), whole run: hit tokens restored from held paths, and
  // admissions made while the cache judged itself overloaded. 0 for other policies.
  int64_t held_hit_tokens = 0;
  int64_t overloaded_admissions = 0;
  // agentx: the lanes' live context (AgentxHarness::live_context_mean_tokens), MLA-KV tokens — the
  // working set every next request needs cached; beside kv_budget_tokens it says whether the cache
  // can hold all lanes. Mean over the profiling window, and at its start. 0 for other harnesses.
  double live_context_tokens = 0;
  int64_t live_context_start_tokens = 0;
  std::map<std::string, int64_t> peak_bytes_by_kind;  // "kv", "checkpoint", "live_state", "host"
};

// Linear-interpolated percentile (q in [0, 100]) of `values`; 0 for an empty set. Sorts a copy.
double percentile(std::vector<double> values, double q);

}  // namespace ds
