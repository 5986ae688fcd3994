#include "replay_model.h"

#include <fmt/format.h>

#include "core/check.h"
#include "engine/clock.h"
#include "model/model_config.h"
#include "replay/progress_bar.h"
#include "replay/report.h"
#include "trace/trace.h"

namespace ds::cli {

void run_model_replay_cli(const CLI::App& cmd, const std::string& model_dir, const EngineFlags& engine,
                          const ReplaySetup& setup, const std::string& trace_spec, bool skip_bad,
                          const std::vector<int>& concurrency, int64_t max_output_tokens, bool json,
                          const std::string& out_dir) {
  DS_CHECK(max_output_tokens >= 0, "--max-output-tokens must be >= 0, got {}", max_output_tokens);
  ModelBackend backend = load_model_backend(model_dir, engine);
  const ModelConfig& mc = backend.config();
  TraceOptions topt;
  topt.skip_bad = skip_bad;
  const Trace trace = load_trace(trace_spec, topt);
  const std::vector<int> concs = trace.closed_loop ? concurrency : std::vector<int>{1};
  if (!json)
    fmt::print("trace {} ({} sessions) | model {} on the {} engine | retention {} | KV budget {} tokens\n",
               trace.source, trace.sessions.size(), model_dir, engine.device.on_cuda() ? "GPU" : "CPU",
               engine.retention, engine.kv_budget_tokens);
  std::vector<RunMetrics> runs;
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
      rc.cache = ec.cache;
      WallClock clock;
      runs.push_back(run_replay(trace, *backend.exec, clock, rc));
      bar.advance(fmt::format("c={}", c));
    }
  }
  if (json) {
    fmt::print("{}", runs_json(runs));
    if (!out_dir.empty()) write_reports(runs, out_dir);
    return;
  }
  fmt::print("\n{}", runs_table(runs));
  auto files = write_reports(runs, out_dir.empty() ? "replay-out" : out_dir);
  fmt::print("wrote");
  for (const auto& p : files) fmt::print(" {}", p);
  fmt::print("\n");
}

}  // namespace ds::cli
