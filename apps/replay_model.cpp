#include "replay_model.h"

#include <fmt/format.h>

#include <memory>

#include "core/check.h"
#include "engine/clock.h"
#include "model/model_config.h"
#include "replay/progress_bar.h"
#include "replay/report.h"
#include "replay_compare.h"
#include "trace/trace.h"

namespace ds::cli {

void run_model_replay_cli(const CLI::App& cmd, const std::string& model_dir, const EngineFlags& engine,
                          const ReplaySetup& setup, const std::string& trace_spec, bool skip_bad,
                          const std::vector<int>& concurrency, int64_t max_output_tokens, bool json,
                          const std::string& out_dir, const std::string& compare_hw) {
  DS_CHECK(max_output_tokens >= 0, "--max-output-tokens must be >= 0, got {}", max_output_tokens);
  DS_CHECK(setup.harness.empty() || setup.harness == "default" || setup.harness == "bench",
           "--executor model supports --harness default or bench, got '{}'", setup.harness);
  ModelBackend backend = load_model_backend(model_dir, engine);
  const ModelConfig& mc = backend.config();
  std::unique_ptr<CostModel> sim_cost;  // --compare-sim
  std::string sim_label;
  if (!compare_hw.empty()) {
    const HardwareProfile hw = HardwareProfile::load(compare_hw);
    sim_cost = cpu_engine_cost_model(mc, model_dir, hw, setup.step_overhead_s);
    sim_label = "sim:" + hw.name;
  }
  TraceOptions topt;
  topt.skip_bad = skip_bad;
  const Trace trace = load_trace(trace_spec, topt);
  const bool bench = setup.harness == "bench" || (setup.harness.empty() && trace.fixed_length);
  const std::vector<int> concs = trace.closed_loop ? concurrency : std::vector<int>{1};
  if (!json)
    fmt::print("trace {} ({} sessions) | model {} on the {} engine | retention {} | KV budget {} tokens\n",
               trace.source, trace.sessions.size(), model_dir, engine.device.on_cuda() ? "GPU" : "CPU",
               engine.retention, engine.kv_budget_tokens);
  std::vector<RunMetrics> runs, sim_runs;
  {
    ProgressBar bar(static_cast<int64_t>(concs.size()), "replay");
    for (size_t i = 0; i < concs.size(); ++i) {
      const int c = concs[i];
      if (i > 0) reset_executor(backend, engine);  // fresh pools and cache per run
      const EngineConfig ec = model_engine_config(backend.sizes, engine);
      ReplayConfig rc;
      rc.label = "model";
      rc.concurrency = c;
      rc.seed = setup.seed;
      rc.duration_s = cmd.count("--duration") ? setup.duration_s : 0;  // wall seconds; 0 = whole trace
      rc.gpus = 1;
      rc.max_output_tokens = max_output_tokens;
      rc.vocab_size = int32_t(mc.vocab_size);
      rc.kv_budget_tokens = engine.kv_budget_tokens;
      rc.scheduler = ec.scheduler;
      rc.scheduler.mixed_batches = setup.mixed_batches;
      rc.cache = ec.cache;
      rc.max_think_s = setup.max_think_s;
      rc.warmup = !bench;
      rc.executor.seed = setup.seed;
      WallClock clock;
      runs.push_back(run_replay(trace, *backend.exec, clock, rc));
      if (sim_cost) {  // the same config: only the executor and the clock differ
        rc.label = sim_label;
        sim_runs.push_back(run_replay(trace, *sim_cost, rc));
      }
      bar.advance(fmt::format("c={}", c));
    }
  }
  if (json) {
    runs.insert(runs.end(), sim_runs.begin(), sim_runs.end());
    fmt::print("{}", runs_json(runs));
    if (!out_dir.empty()) write_reports(runs, out_dir);
    return;
  }
  if (sim_cost) {
    fmt::print("\nlive ({} engine, wall clock) vs simulated ({}, virtual clock):\n{}",
               engine.device.on_cuda() ? "GPU" : "CPU", sim_label, live_vs_sim_table(runs, sim_runs));
    runs.insert(runs.end(), sim_runs.begin(), sim_runs.end());
  }
  fmt::print("\n{}", runs_table(runs));
  auto files = write_reports(runs, out_dir.empty() ? "replay-out" : out_dir);
  fmt::print("wrote");
  for (const auto& p : files) fmt::print(" {}", p);
  fmt::print("\n");
}

}  // namespace ds::cli
