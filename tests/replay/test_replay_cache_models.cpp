// The three cache models under the AgentX harness on K3 / 8 x B300 (small synthetic:agentx trace,
// short windows): every run is measured, labelled, deterministic, and the emulations fill their
// own counters.
#include <gtest/gtest.h>

#include "core/check.h"
#include "replay/replay.h"
#include "replay/replay_setup.h"
#include "replay/report.h"
#include "trace/trace.h"

namespace ds {
namespace {

const char* kTrace =
    "synthetic:agentx,sessions=6,turns=10,turns_mean=14,root_context=80000,first_input=24454,"
    "sub_input=20000,sub_first=9000";

ReplaySetup small_agentx() {
  ReplaySetup s;
  s.model = "kimi-k3";
  s.hardware = "b300";
  s.gpus = 8;
  s.kv_dtype_bytes = 1;
  s.harness = "agentx";
  s.agentx.cache_warmup_s = 60;
  s.agentx.profile_s = 240;
  s.concurrency = {3};
  s.variants = {
      CacheVariant{.label = "vllm",
                   .retention = "vllm:0",
                   .eviction = "vllm-lru",
                   .tiers = {"hbm"},
                   .cache_model = "vllm"},
      CacheVariant{.label = "vllm+dram",
                   .retention = "vllm:0",
                   .eviction = "vllm-lru",
                   .tiers = {"hbm", "dram"},
                   .cache_model = "vllm"},
      CacheVariant{
          .label = "sglang", .retention = "", .eviction = "", .tiers = {"hbm"}, .cache_model = "sglang"},
      CacheVariant{.label = "ours", .retention = "interval:32768", .eviction = "leaf-lru", .tiers = {"hbm"}},
  };
  return s;
}

TEST(ReplayCacheModels, AgentxRunsOfEveryCacheModel) {
  const Trace trace = load_trace(kTrace);
  const PreparedSweep sw = prepare_sweep(small_agentx());
  ASSERT_EQ(sw.configs.size(), 4u);
  const auto runs = run_sweep(trace, *sw.cost, sw.configs, 2);
  const char* models[] = {"vllm", "vllm", "sglang", "deltaserve"};
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunMetrics& m = runs[i];
    SCOPED_TRACE(m.label);
    EXPECT_EQ(m.cache_model, models[i]);
    EXPECT_EQ(m.harness, "agentx");
    EXPECT_GT(m.n_requests, 10);
    EXPECT_GT(m.realized_hit_rate, 0.5);  // a large budget: most of each prompt is reused
    EXPECT_LE(m.realized_hit_rate, m.theoretical_hit_rate + 1e-9);
    EXPECT_GT(m.output_tok_s_total, 0);
    EXPECT_GT(m.window_s, 200);
    EXPECT_GT(m.n_lookups, 0);
  }
  const std::string json = runs_json(runs);
  for (const char* key : {"\"cache_model\"", "\"harness\"", "\"tiers\"", "\"realized_hit_rate\"",
                          "\"ttft_p50_s\"", "\"output_tok_s_total\"", "\"vllm_device_hit_rate\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  // Deterministic: the same sweep again gives the same JSON.
  EXPECT_EQ(runs_json(run_sweep(trace, *sw.cost, sw.configs, 1)), json);
}

TEST(ReplayCacheModels, SglangSplitsTheBudgetByTheMambaRatio) {
  ReplaySetup s = small_agentx();
  const PreparedSweep sw = prepare_sweep(s);
  const CacheConfig& c = sw.configs[2].cache;
  ASSERT_EQ(c.cache_model, "sglang");
  const double kv = double(c.sglang.kv_pages * c.sglang.page_bytes);
  const double st = double(c.sglang.state_slots * c.sglang.state_bytes);
  EXPECT_NEAR(st / kv, 0.9, 0.01);
  s.variants = {CacheVariant{.label = "x", .tiers = {"hbm", "dram"}, .cache_model = "sglang"}};
  EXPECT_THROW(prepare_sweep(s), Error);
}

}  // namespace
}  // namespace ds
