// `replay --executor model --compare-sim HW`: the same workload, scheduler and cache configuration
// replayed on the live CPU engine (wall clock) and on the simulator (cost model with hardware
// profile HW, virtual clock), side by side. Only the executor and the clock differ, so realized hit
// rates agree wherever the request order does; the time ratios (live / simulated) calibrate the
// cost model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "plan/cost_model.h"
#include "replay/run_metrics.h"

namespace ds::cli {

// The cost model of the model engine: tensor parallel 1, f32 MLA latents (what ModelExecutor and
// GpuExecutor store),
// chunked KDA prefill in chunks of 64; `step_overhead_s` < 0 = the profile's.
std::unique_ptr<CostModel> cpu_engine_cost_model(const ModelConfig& config, const std::string& name,
                                                 const HardwareProfile& hw, double step_overhead_s);

// One row per concurrency: realized hit rate, TTFT p50/p90, TPOT p50 and output tok/s, live and
// simulated, with live / simulated ratios. `live` and `sim` are in the same (concurrency) order.
std::string live_vs_sim_table(const std::vector<RunMetrics>& live, const std::vector<RunMetrics>& sim);

}  // namespace ds::cli
