#include "server/serving_metrics.h"

#include <fmt/format.h>

namespace ds {

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++counts[i];
  sum += v;
  ++count;
}

namespace {

void gauge(std::string& out, const char* name, const char* help, const char* type, const std::string& labels,
           double v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{{}}} {}\n", name, help, name, type, name, labels, v);
}

void histogram(std::string& out, const char* name, const char* help, const std::string& labels,
               const Histogram& h) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  int64_t cum = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cum += h.counts[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, h.bounds[i], cum);
  }
  cum += h.counts.back();
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels,
                     cum, name, labels, h.sum, name, labels, h.count);
}

}  // namespace

std::string prometheus_text(const ServingMetrics& m, const std::string& model_name) {
  const std::string L = fmt::format("model_name=\"{}\"", model_name);
  std::string out;
  gauge(out, "deltaserve_requests_running", "Requests admitted and holding cache memory.", "gauge", L,
        double(m.n_running));
  gauge(out, "deltaserve_requests_waiting", "Requests queued, not yet admitted.", "gauge", L,
        double(m.n_waiting));
  out +=
      "# HELP deltaserve_requests_total Requests that ended, by how.\n# TYPE deltaserve_requests_total "
      "counter\n";
  for (auto [what, v] : {std::pair{"finished", m.requests_finished}, std::pair{"aborted", m.requests_aborted},
                         std::pair{"rejected", m.requests_rejected}})
    out += fmt::format("deltaserve_requests_total{{{},outcome=\"{}\"}} {}\n", L, what, v);
  gauge(out, "deltaserve_prompt_tokens_total", "Prompt tokens of finished requests.", "counter", L,
        double(m.prompt_tokens));
  gauge(out, "deltaserve_generation_tokens_total", "Tokens sampled.", "counter", L,
        double(m.generation_tokens));
  gauge(out, "deltaserve_preemptions_total", "Requests preempted (recompute) under memory pressure.",
        "counter", L, double(m.preemptions));
  gauge(out, "deltaserve_engine_steps_total", "Engine steps executed.", "counter", L, double(m.steps));
  out +=
      "# HELP deltaserve_cache_bytes Cache memory in use, by kind and tier.\n# TYPE deltaserve_cache_bytes "
      "gauge\n";
  for (size_t t = 0; t < m.tiers.size() && t < m.cache.tiers.size(); ++t) {
    const TierStats& ts = m.cache.tiers[t];
    for (auto [kind, v] : {std::pair{"kv", ts.kv_bytes}, std::pair{"checkpoint", ts.checkpoint_bytes},
                           std::pair{"live_state", ts.live_bytes}})
      out += fmt::format("deltaserve_cache_bytes{{{},kind=\"{}\",tier=\"{}\"}} {}\n", L, kind, m.tiers[t], v);
  }
  out +=
      "# HELP deltaserve_cache_hit_tokens_total Prompt tokens restored from the cache, by the tier their KV "
      "came from.\n"
      "# TYPE deltaserve_cache_hit_tokens_total counter\n";
  for (size_t t = 0; t < m.tiers.size() && t < m.cache.tiers.size(); ++t)
    out += fmt::format("deltaserve_cache_hit_tokens_total{{{},tier=\"{}\"}} {}\n", L, m.tiers[t],
                       m.cache.tiers[t].hit_tokens);
  gauge(out, "deltaserve_cache_prompt_tokens_total", "Prompt tokens admitted (hit-rate denominator).",
        "counter", L, double(m.cache.prompt_tokens));
  gauge(out, "deltaserve_cache_lost_tokens_total",
        "KV-reachable prompt tokens lost to a missing KDA checkpoint.", "counter", L,
        double(m.cache.lost_tokens));
  gauge(out, "deltaserve_checkpoints_created_total", "KDA state checkpoints written.", "counter", L,
        double(m.cache.checkpoints_created));
  gauge(out, "deltaserve_checkpoints_dropped_total", "KDA state checkpoints that left the cache for good.",
        "counter", L, double(m.cache.checkpoints_dropped));
  gauge(out, "deltaserve_checkpoints_restored_total", "Checkpoint restores (cache hits).", "counter", L,
        double(m.cache.checkpoints_used));
  histogram(out, "deltaserve_time_to_first_token_seconds", "Time from arrival to the first sampled token.", L,
            m.ttft_s);
  histogram(out, "deltaserve_time_per_output_token_seconds", "Mean time between output tokens of a request.",
            L, m.tpot_s);
  histogram(out, "deltaserve_e2e_request_latency_seconds", "Time from arrival to the last token.", L,
            m.e2e_s);
  return out;
}

}  // namespace ds
