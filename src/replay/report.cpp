#include "replay/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "plan/economics.h"
#include "replay/svg_plot.h"

namespace ds {
namespace {

// Every scalar field of RunMetrics in report order. JSON keys and CSV columns are the field names
// themselves (the stringified member), so a report key always equals the field it prints.
// clang-format off
#define DS_RUN_METRICS_SCALARS(X)                                                                  \
  X(label) X(concurrency) X(cache_model) X(harness) X(retention) X(eviction) X(tiers) X(gpus)    \
  X(kv_budget_tokens)                                                                            \
  X(theoretical_hit_rate) X(realized_hit_rate) X(kv_reachable_rate) X(offline_bound_hit_rate)    \
  X(n_prompt_tokens) X(n_hit_tokens) X(n_kv_reachable_tokens) X(n_theoretical_hit_tokens)        \
  X(vllm_device_hit_rate) X(vllm_external_hit_rate) X(vllm_hit_rate_with_preempted) X(n_lookups)  \
  X(ttft_p50_s) X(ttft_p90_s) X(ttft_p99_s) X(n_ttft_censored) X(tpot_p50_s)                     \
  X(interactivity_tok_s) X(output_tok_s_total) X(output_tok_s_per_gpu) X(total_tok_s_per_gpu)    \
  X(window_s) X(elapsed_virtual_s) X(usd_per_m_input_tokens) X(usd_per_m_output_tokens)         \
  X(checkpoint_bytes_per_hit_token)                                                              \
  X(n_requests) X(n_warmup_requests) X(n_rejected) X(n_output_tokens) X(n_steps) X(n_preemptions) \
  X(checkpoints_created) X(checkpoints_dropped) X(live_context_tokens) X(live_context_start_tokens)   \
  X(held_hit_tokens) X(overloaded_admissions) X(n_errors) X(first_error)
// clang-format on

// The fields that are measurements over the measured requests: without any (every request rejected,
// still waiting, or warm-up), they are written as null / empty, never as a zero that reads as a result.
bool is_measurement(std::string_view field) {
  static const std::set<std::string_view> kFields = {
      "theoretical_hit_rate", "realized_hit_rate",    "kv_reachable_rate",  "ttft_p50_s",
      "ttft_p90_s",           "ttft_p99_s",           "tpot_p50_s",         "interactivity_tok_s",
      "output_tok_s_total",   "output_tok_s_per_gpu", "total_tok_s_per_gpu"};
  return kFields.count(field) > 0;
}

bool measured(const RunMetrics& r) {
  return r.n_requests > 0;
}

nlohmann::ordered_json run_json(const RunMetrics& r) {
  nlohmann::ordered_json j;
#define DS_JSON_FIELD(f)                  \
  if (!measured(r) && is_measurement(#f)) \
    j[#f] = nullptr;                      \
  else                                    \
    j[#f] = r.f;
  DS_RUN_METRICS_SCALARS(DS_JSON_FIELD)
#undef DS_JSON_FIELD
  j["hit_rate_by_tier"] = nlohmann::ordered_json::object();
  for (const auto& [tier, rate] : r.hit_rate_by_tier) j["hit_rate_by_tier"][tier] = rate;
  j["peak_bytes_by_kind"] = nlohmann::ordered_json::object();
  for (const auto& [kind, bytes] : r.peak_bytes_by_kind) j["peak_bytes_by_kind"][kind] = bytes;
  j["time_breakdown_s"] = nlohmann::ordered_json::object();
  for (const auto& [part, sec] : r.time_breakdown_s) j["time_breakdown_s"][part] = sec;
  return j;
}

// One CSV cell: numbers as they are (doubles with 6 decimals), text quoted when it holds a comma or
// a quote (quotes doubled, RFC 4180).
std::string csv_cell(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
std::string csv_cell(double v) {
  return fmt::format("{:.6f}", v);
}
std::string csv_cell(int64_t v) {
  return std::to_string(v);
}
std::string csv_cell(int v) {
  return std::to_string(v);
}

std::string pct(double rate) {
  return fmt::format("{:.1f}", 100.0 * rate);
}

std::vector<std::string> labels_in_order(const std::vector<RunMetrics>& runs) {
  std::vector<std::string> labels;
  for (const auto& r : runs)
    if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
  return labels;
}

constexpr const char* kReportFileNames[] = {"replay.json",    "replay.csv",          "hit_rate.svg",
                                            "throughput.svg", "ttft_throughput.svg", "checkpoint_bytes.svg"};

using ChartPoint = std::pair<double, double>;  // (x, y) in data units

// One chart series per run label (labels in first-seen order): the runs `keep` accepts, as `point`
// gives them, named label + suffix, each point captioned with its concurrency when `captioned`.
template <class Keep, class Point>
std::vector<ChartSeries> series_per_label(const std::vector<RunMetrics>& runs, const char* suffix, Keep keep,
                                          Point point, bool captioned) {
  std::vector<ChartSeries> out;
  for (const auto& label : labels_in_order(runs)) {
    ChartSeries s;
    s.name = label;
    s.name += suffix;
    for (const auto& r : runs) {
      if (r.label != label || !keep(r)) continue;
      s.points.push_back(point(r));
      if (captioned) s.point_labels.push_back(fmt::format("c={}", r.concurrency));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string runs_json(const std::vector<RunMetrics>& runs) {
  nlohmann::ordered_json doc;
  doc["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : runs) doc["runs"].push_back(run_json(r));
  return doc.dump(2) + "\n";
}

std::string runs_csv(const std::vector<RunMetrics>& runs) {
  std::set<std::string> tiers, kinds;
  for (const auto& r : runs) {
    for (const auto& [t, _] : r.hit_rate_by_tier) tiers.insert(t);
    for (const auto& [k, _] : r.peak_bytes_by_kind) kinds.insert(k);
  }
  std::string out;
#define DS_CSV_NAME(f) out += (out.empty() ? "" : ",") + std::string(#f);
  DS_RUN_METRICS_SCALARS(DS_CSV_NAME)
#undef DS_CSV_NAME
  for (const auto& t : tiers) out += ",hit_rate_by_tier." + t;
  for (const auto& k : kinds) out += ",peak_bytes_by_kind." + k;
  out += "\n";
  for (const auto& r : runs) {
    std::string line;
#define DS_CSV_VALUE(f) \
  line += (line.empty() ? "" : ",") + (!measured(r) && is_measurement(#f) ? std::string() : csv_cell(r.f));
    DS_RUN_METRICS_SCALARS(DS_CSV_VALUE)
#undef DS_CSV_VALUE
    for (const auto& t : tiers) {
      auto it = r.hit_rate_by_tier.find(t);
      line +=
          "," + (measured(r) ? csv_cell(it == r.hit_rate_by_tier.end() ? 0.0 : it->second) : std::string());
    }
    for (const auto& k : kinds) {
      auto it = r.peak_bytes_by_kind.find(k);
      line += "," + csv_cell(it == r.peak_bytes_by_kind.end() ? int64_t{0} : it->second);
    }
    out += line + "\n";
  }
  return out;
}

std::string runs_table(const std::vector<RunMetrics>& runs) {
  // Units in the header: % of prompt tokens, seconds, tokens per second (node = all GPUs together).
  std::string out = fmt::format(
      "{:<16} {:>4} {:>6} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8} {:>5} {:>8} {:>9} "
      "{:>8} {:>8} {:>7} {:>6} {:>6} {:>5} {:>6} {:>7} {:>6} {:>7}\n",
      "config", "conc", "reqs", "rej", "theo%", "bound%", "hit%", "kv%", "hbm%", "host%", "ttft50_s",
      "ttft90_s", "ttft99_s", "cens", "tpot50_s", "out_tok/s", "out/gpu", "tot/gpu", "intact", "ckpt+",
      "ckpt-", "pre", "live_M", "virt_s", "$in/M", "$out/M");
  for (const auto& r : runs) {
    if (!measured(r)) {
      out += fmt::format(
          "{:<16} {:>4} {:>6} {:>5}   no measured requests ({} rejected as too large for the cache, "
          "{} without a first token after {:.0f} virtual s)\n",
          r.label, r.concurrency, r.n_requests, r.n_rejected, r.n_rejected, r.n_ttft_censored,
          r.elapsed_virtual_s);
      continue;
    }
    double hbm = 0, host = 0;
    for (const auto& [t, rate] : r.hit_rate_by_tier) (t == "hbm" ? hbm : host) += rate;
    out += fmt::format(
        "{:<16} {:>4} {:>6} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8.2f} {:>8.2f} {:>8.2f} {:>5} "
        "{:>8.4f} {:>9.1f} {:>8.1f} {:>8.1f} {:>7.1f} {:>6} {:>6} {:>5} {:>6.2f} {:>7.0f} {:>6.2f} "
        "{:>7.2f}\n",
        r.label, r.concurrency, r.n_requests, r.n_rejected, pct(r.theoretical_hit_rate),
        pct(r.offline_bound_hit_rate), pct(r.realized_hit_rate), pct(r.kv_reachable_rate), pct(hbm),
        pct(host), r.ttft_p50_s, r.ttft_p90_s, r.ttft_p99_s, r.n_ttft_censored, r.tpot_p50_s,
        r.output_tok_s_total, r.output_tok_s_per_gpu, r.total_tok_s_per_gpu, r.interactivity_tok_s,
        r.checkpoints_created, r.checkpoints_dropped, r.n_preemptions, r.live_context_tokens / 1e6,
        r.elapsed_virtual_s, r.usd_per_m_input_tokens, r.usd_per_m_output_tokens);
  }
  out += fmt::format(
      "(reqs: measured requests completed; rej: requests rejected as too large for the cache; "
      "theo/bound/hit/kv/hbm/host: % of prompt tokens; bound: upper bound of any policy on this budget and "
      "timeline (offline_bound.h); out_tok/s: output tokens per second of the node; out/gpu, tot/gpu: output "
      "and "
      "input+output tokens per second per GPU; live_M: agentx lanes' live context, M tokens (mean over the "
      "window); intact: 1/tpot50 tokens per second per user; cens: requests "
      "without a first token at the end, counted in TTFT with the time waited; $in/M, $out/M: GPU-hours of "
      "the "
      "window at --gpu-hour-usd per million tokens, input : output = 1 : 5, beside the market floor ${:.0f} "
      "/ "
      "${:.0f})\n",
      kMarketFloorUsdPerMInput, kMarketFloorUsdPerMOutput);
  return out;
}

std::string runs_side_by_side(const std::vector<RunMetrics>& runs) {
  auto labels = labels_in_order(runs);
  std::map<std::pair<int, std::string>, const RunMetrics*> by_key;
  std::set<int> concs;
  for (const auto& r : runs) by_key[{r.concurrency, r.label}] = &r, concs.insert(r.concurrency);
  std::string out = fmt::format("{:>4} {:>6}", "conc", "theo%");
  for (const auto& l : labels) out += fmt::format(" | {:^26}", l);
  out += fmt::format("\n{:>4} {:>6}", "", "");
  for (size_t i = 0; i < labels.size(); ++i)
    out += fmt::format(" | {:>6} {:>8} {:>10}", "hit%", "ttft50_s", "out/gpu");
  out += "\n";
  for (int c : concs) {
    double theo = 0;
    bool any = false;
    for (const auto& l : labels)
      if (auto it = by_key.find({c, l}); it != by_key.end() && measured(*it->second))
        theo = it->second->theoretical_hit_rate, any = true;
    out += fmt::format("{:>4} {:>6}", c, any ? pct(theo) : std::string("-"));
    for (const auto& l : labels) {
      auto it = by_key.find({c, l});
      if (it == by_key.end()) {
        out += fmt::format(" | {:>26}", "-");
        continue;
      }
      const RunMetrics& r = *it->second;
      if (!measured(r)) {
        out += fmt::format(" | {:>26}", fmt::format("none measured, {} rej", r.n_rejected));
        continue;
      }
      out += fmt::format(" | {:>6} {:>8.2f} {:>10.1f}", pct(r.realized_hit_rate), r.ttft_p50_s,
                         r.output_tok_s_per_gpu);
    }
    out += "\n";
  }
  return out;
}

std::string hit_rate_plot_svg(const std::vector<RunMetrics>& runs) {
  LineChart chart;
  chart.title = "Prefix-cache hit rate vs concurrency";
  chart.x_label = "concurrency (lanes)";
  chart.y_label = "hit rate";
  chart.x_log2 = true;
  chart.y_max = 1.0;
  chart.series = series_per_label(
      runs, " realized", [](const RunMetrics& r) { return r.concurrency > 0 && measured(r); },
      [](const RunMetrics& r) {
        return ChartPoint{double(r.concurrency), r.realized_hit_rate};
      },
      false);
  ChartSeries theo;
  theo.name = "theoretical";
  std::set<int> seen;
  for (const auto& r : runs)
    if (r.concurrency > 0 && measured(r) && seen.insert(r.concurrency).second)
      theo.points.push_back({r.concurrency, r.theoretical_hit_rate});
  std::sort(theo.points.begin(), theo.points.end());
  chart.series.push_back(std::move(theo));
  return render_svg(chart);
}

std::string throughput_plot_svg(const std::vector<RunMetrics>& runs) {
  LineChart chart;
  chart.title = "Throughput per GPU vs interactivity";
  chart.x_label = "interactivity (tok/s per user = 1/TPOT)";
  chart.y_label = "output tok/s per GPU";
  chart.series = series_per_label(
      runs, "", measured,
      [](const RunMetrics& r) {
        return ChartPoint{r.interactivity_tok_s, r.output_tok_s_per_gpu};
      },
      true);
  return render_svg(chart);
}

std::string ttft_throughput_plot_svg(const std::vector<RunMetrics>& runs) {
  LineChart chart;
  chart.title = "TTFT p50 vs output throughput per GPU (lower right is better)";
  chart.x_label = "output tok/s per GPU";
  chart.y_label = "TTFT p50 (s)";
  chart.series = series_per_label(
      runs, "", [](const RunMetrics&) { return true; },
      [](const RunMetrics& r) {
        return ChartPoint{r.output_tok_s_per_gpu, r.ttft_p50_s};
      },
      true);
  return render_svg(chart);
}

std::string checkpoint_bytes_plot_svg(const std::vector<RunMetrics>& runs) {
  LineChart chart;
  chart.title = "Checkpoint bytes written per hit token vs concurrency";
  chart.x_label = "concurrency (lanes)";
  chart.y_label = "checkpoint bytes per hit token (per GPU)";
  chart.x_log2 = true;
  chart.series = series_per_label(
      runs, "", [](const RunMetrics& r) { return r.concurrency > 0; },
      [](const RunMetrics& r) {
        return ChartPoint{double(r.concurrency), r.checkpoint_bytes_per_hit_token};
      },
      false);
  return render_svg(chart);
}

ReportFiles::ReportFiles(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    fail("report folder {} exists and is not a directory", dir);
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create report folder {}: {}", dir, ec.message());
  for (const char* name : kReportFileNames)
    files_.push_back(std::make_unique<AtomicFile>((std::filesystem::path(dir) / name).string()));
}

std::vector<std::string> ReportFiles::write(const std::vector<RunMetrics>& runs) {
  DS_CHECK(!files_.empty(), "report files of {} written twice", dir_);
  const std::string texts[] = {runs_json(runs),
                               runs_csv(runs),
                               hit_rate_plot_svg(runs),
                               throughput_plot_svg(runs),
                               ttft_throughput_plot_svg(runs),
                               checkpoint_bytes_plot_svg(runs)};
  std::vector<std::string> written;
  for (size_t i = 0; i < files_.size(); ++i) {
    files_[i]->write(texts[i]);
    files_[i]->commit();
    written.push_back(files_[i]->path());
  }
  files_.clear();
  return written;
}

std::vector<std::string> write_reports(const std::vector<RunMetrics>& runs, const std::string& dir) {
  return ReportFiles(dir).write(runs);
}

}  // namespace ds
