// Reports: percentiles, the JSON document's keys and ranges, CSV shape, SVG well-formedness.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "replay/report.h"
#include "replay/svg_plot.h"

namespace ds {
namespace {

std::vector<RunMetrics> two_runs() {
  RunMetrics a;
  a.label = "hbm";
  a.concurrency = 1;
  a.retention = "interval:32768";
  a.eviction = "leaf-lru";
  a.tiers = "hbm";
  a.theoretical_hit_rate = 0.95;
  a.realized_hit_rate = 0.9;
  a.hit_rate_by_tier = {{"hbm", 0.9}};
  a.ttft_p50_s = 1.5;
  a.tpot_p50_s = 0.02;
  a.interactivity_tok_s = 50;
  a.output_tok_s_per_gpu = 10;
  a.n_requests = 12;
  RunMetrics b = a;
  b.label = "hbm+dram";
  b.tiers = "hbm,dram";
  b.concurrency = 8;
  b.hit_rate_by_tier = {{"hbm", 0.5}, {"dram", 0.3}};
  b.realized_hit_rate = 0.8;
  return {a, b};
}

TEST(Report, PercentileInterpolatesLinearly) {
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(percentile({3}, 99), 3);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 90), 4.6);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 100), 5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0), 1);
}

TEST(Report, JsonHasTheDocumentedKeysAndRatesInUnitRange) {
  auto doc = nlohmann::json::parse(runs_json(two_runs()));
  ASSERT_EQ(doc["runs"].size(), 2u);
  for (const auto& r : doc["runs"]) {
    for (const char* key : {"concurrency", "retention", "eviction", "tiers", "theoretical_hit_rate",
                            "realized_hit_rate", "hit_rate_by_tier", "ttft_p50_s", "ttft_p90_s", "tpot_p50_s",
                            "output_tok_s_per_gpu", "elapsed_virtual_s"})
      EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_GE(r["realized_hit_rate"].get<double>(), 0);
    EXPECT_LE(r["realized_hit_rate"].get<double>(), 1);
  }
  EXPECT_DOUBLE_EQ(doc["runs"][1]["hit_rate_by_tier"]["dram"].get<double>(), 0.3);
  EXPECT_EQ(doc["runs"][1]["tiers"], "hbm,dram");
}

TEST(Report, CsvHasAHeaderAndOneLinePerRun) {
  std::string csv = runs_csv(two_runs());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("label,concurrency,", 0), 0u);
  EXPECT_NE(csv.find("hit_rate_by_tier.dram"), std::string::npos);
  EXPECT_NE(csv.find("\"hbm,dram\""), std::string::npos);
}

TEST(Report, JsonKeysAndCsvColumnsAreTheFieldNames) {
  const auto runs = two_runs();
  const auto run = nlohmann::json::parse(runs_json(runs))["runs"][0];
  for (const char* key :
       {"n_prompt_tokens", "n_hit_tokens", "n_kv_reachable_tokens", "n_theoretical_hit_tokens", "n_requests",
        "n_warmup_requests", "n_rejected", "n_output_tokens", "n_steps", "n_preemptions",
        "checkpoints_created", "checkpoints_dropped", "peak_bytes_by_kind"})
    EXPECT_TRUE(run.contains(key)) << key;
  EXPECT_FALSE(run.contains("state_reachable_tokens"));
  EXPECT_EQ(run["n_hit_tokens"].get<int64_t>(), runs[0].n_hit_tokens);
  const std::string csv = runs_csv(runs);
  std::stringstream header(csv.substr(0, csv.find('\n')));
  std::string column;
  int n_columns = 0;
  while (std::getline(header, column, ',')) {
    ++n_columns;
    const std::string field = column.substr(0, column.find('.'));  // hit_rate_by_tier.<tier>
    EXPECT_TRUE(run.contains(field)) << column;
  }
  EXPECT_GT(n_columns, 25);
}

TEST(Report, NoMeasuredRequestsIsSaidNotPrintedAsZeros) {
  auto runs = two_runs();
  RunMetrics& r = runs[1];
  r.n_requests = 0;
  r.n_rejected = 7;
  r.n_ttft_censored = 2;
  r.ttft_p50_s = r.tpot_p50_s = r.realized_hit_rate = r.output_tok_s_per_gpu = 0;
  const auto doc = nlohmann::json::parse(runs_json(runs));
  for (const char* key : {"realized_hit_rate", "theoretical_hit_rate", "ttft_p50_s", "tpot_p50_s",
                          "output_tok_s_per_gpu", "interactivity_tok_s"}) {
    EXPECT_TRUE(doc["runs"][1][key].is_null()) << key;
    EXPECT_FALSE(doc["runs"][0][key].is_null()) << key;
  }
  EXPECT_EQ(doc["runs"][1]["n_rejected"], 7);
  EXPECT_EQ(doc["runs"][1]["n_requests"], 0);
  const std::string table = runs_table(runs);
  EXPECT_NE(
      table.find("no measured requests (7 rejected as too large for the cache, 2 without a first token"),
      std::string::npos)
      << table;
  EXPECT_NE(runs_side_by_side(runs).find("none measured, 7 rej"), std::string::npos);
  // The CSV leaves the measurements of that run empty; the plots leave out its points.
  const std::string csv = runs_csv(runs);
  const std::string line = csv.substr(csv.rfind("hbm+dram"));
  EXPECT_NE(line.find(",,"), std::string::npos) << line;
  EXPECT_EQ(throughput_plot_svg(runs).find("c=8"), std::string::npos);
  EXPECT_NE(throughput_plot_svg(runs).find("c=1"), std::string::npos);
}

TEST(Report, TablesAndPlots) {
  auto runs = two_runs();
  std::string side = runs_side_by_side(runs);
  EXPECT_NE(side.find("hbm+dram"), std::string::npos);
  EXPECT_NE(runs_table(runs).find("90.0"), std::string::npos);
  for (const std::string& svg : {hit_rate_plot_svg(runs), throughput_plot_svg(runs)}) {
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("<polyline"), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
  }
  LineChart empty;
  empty.title = "a<b & c";
  std::string svg = render_svg(empty);  // no series: still a valid document, escaped title
  EXPECT_NE(svg.find("a&lt;b &amp; c"), std::string::npos);
}

}  // namespace
}  // namespace ds
