#include "replay_compare.h"

#include <fmt/format.h>

#include "core/check.h"
#include "plan/model_profile.h"

namespace ds::cli {

std::unique_ptr<CostModel> cpu_engine_cost_model(const ModelConfig& config, const std::string& name,
                                                 const HardwareProfile& hw, double step_overhead_s) {
  const ModelProfile profile = ModelProfile::from_config(config, name);
  return std::make_unique<CostModel>(
      profile, hw,
      CostOptions{.tp = 1, .kv_dtype_bytes = 4, .kda_chunk_tokens = 64, .step_overhead_s = step_overhead_s});
}

namespace {
std::string ratio(double live, double sim) {
  if (sim <= 0) return "-";
  return fmt::format("{:.2f}", live / sim);
}
}  // namespace

std::string live_vs_sim_table(const std::vector<RunMetrics>& live, const std::vector<RunMetrics>& sim) {
  DS_CHECK(live.size() == sim.size(), "live-vs-sim table: {} live runs but {} simulated", live.size(),
           sim.size());
  std::string s =
      fmt::format("{:>4} | {:>13} | {:>22} | {:>22} | {:>24} | {:>20} | {:>20} | {:>9}\n", "conc",
                  "hit% live sim", "TTFT p50 ms live sim x", "TTFT p90 ms live sim x",
                  "TPOT p50 ms live sim x", "out tok/s live sim x", "run s live sim x", "reqs l/s");
  for (size_t i = 0; i < live.size(); ++i) {
    const RunMetrics &l = live[i], &m = sim[i];
    s += fmt::format(
        "{:>4} | {:>6.1f} {:>6.1f} | {:>8.1f} {:>8.1f} {:>6} | {:>8.1f} {:>8.1f} {:>6} | {:>7.2f} {:>7.2f} "
        "{:>8} | "
        "{:>6.1f} {:>6.1f} {:>6} | {:>6.1f} {:>6.1f} {:>6} | {:>4}/{:<4}\n",
        l.concurrency, 100 * l.realized_hit_rate, 100 * m.realized_hit_rate, 1e3 * l.ttft_p50_s,
        1e3 * m.ttft_p50_s, ratio(l.ttft_p50_s, m.ttft_p50_s), 1e3 * l.ttft_p90_s, 1e3 * m.ttft_p90_s,
        ratio(l.ttft_p90_s, m.ttft_p90_s), 1e3 * l.tpot_p50_s, 1e3 * m.tpot_p50_s,
        ratio(l.tpot_p50_s, m.tpot_p50_s), l.output_tok_s_total, m.output_tok_s_total,
        ratio(l.output_tok_s_total, m.output_tok_s_total), l.elapsed_virtual_s, m.elapsed_virtual_s,
        ratio(l.elapsed_virtual_s, m.elapsed_virtual_s), l.n_requests, m.n_requests);
  }
  s += "simulated time by part (cost model, whole run, s):\n";
  for (const RunMetrics& m : sim) {
    s += fmt::format("{:>4} |", m.concurrency);
    for (const char* part :
         {"weights", "gemm", "attn", "kda", "checkpoint", "transfer", "overhead", "total"}) {
      auto it = m.time_breakdown_s.find(part);
      s += fmt::format(" {} {:.1f}", part, it == m.time_breakdown_s.end() ? 0.0 : it->second);
    }
    s += fmt::format(" | elapsed virtual {:.1f} s\n", m.elapsed_virtual_s);
  }
  s += "(x = live / simulated; hit% = realized hit rate of the measured requests; out tok/s = output tokens "
       "per "
       "second of the run)\n";
  return s;
}

}  // namespace ds::cli
