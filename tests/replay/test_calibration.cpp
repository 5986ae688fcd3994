// Calibration: every calibration point (fitted and held out) of the bundled SGLang-cookbook set
// replays within 15 % on the bundled B300 profile, and every check point but the documented misses; the fit
// sees only "fit" points; bad files fail with the key named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "core/check.h"
#include "replay/calibration.h"

namespace ds {
namespace {

TEST(Calibration, EveryCalibrationPointWithin15Percent) {
  const CalibrationSet set = load_calibration("kimi-k3-b300-sglang");
  const auto results = replay_calibration(set, HardwareProfile::load(set.hardware));
  int gated = 0, held_out = 0;
  for (const CalibrationResult& r : results) {
    if (r.role == "check") continue;
    held_out += r.role == "held_out";
    for (const auto& [metric, measured] : r.measured) {
      EXPECT_LE(std::abs(r.error(metric)), 0.15)
          << r.id << " " << metric << ": predicted " << r.predicted.at(metric) << " measured " << measured;
      ++gated;
    }
  }
  EXPECT_EQ(gated, 9);  // concurrency 1, 16, 64 x TTFT, TPOT, throughput
  EXPECT_GE(held_out, 1);
}

// The check points (NVFP4 checkpoint, DSPARK speculative decoding; predicted, never fitted) are
// held to the same 15 % except the misses docs/perf.md explains: the NVFP4 MoE kernel's own speed at
// concurrency 1 (the cost model sees only its bytes), and DSPARK at concurrency 16 (expert reads of
// a sequence's verify tokens taken as independent draws; acceptance not published). The list is
// exact: a miss that comes within 15 % must leave it, and no other metric may miss.
TEST(Calibration, CheckPointsWithin15PercentButTheDocumentedMisses) {
  const std::set<std::pair<std::string, std::string>> known = {
      {"LL-NVFP4-c1", "tpot_p50_s"},         {"LL-NVFP4-c1", "total_tok_s_per_gpu"},
      {"LL-MXFP4-DSPARK-c16", "ttft_p50_s"}, {"LL-MXFP4-DSPARK-c16", "tpot_p50_s"},
      {"LL-NVFP4-DSPARK-c16", "tpot_p50_s"},
  };
  const CalibrationSet set = load_calibration("kimi-k3-b300-sglang");
  const auto results = replay_calibration(set, HardwareProfile::load(set.hardware));
  int checked = 0;
  for (const CalibrationResult& r : results) {
    if (r.role != "check") continue;
    for (const auto& [metric, measured] : r.measured) {
      const bool within = std::abs(r.error(metric)) <= 0.15;
      EXPECT_EQ(within, known.count({r.id, metric}) == 0)
          << r.id << " " << metric << ": predicted " << r.predicted.at(metric) << " measured " << measured;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 27);  // 9 check points x TTFT, TPOT, throughput
}

// A set with one fit point and one held-out point whose "measurement" is absurd: the fit must not
// move towards it.
TEST(Calibration, FitIgnoresHeldOutPoints) {
  CalibrationSet set = load_calibration("kimi-k3-b300-sglang");
  std::vector<CalibrationPoint> keep;
  for (const CalibrationPoint& p : set.points)
    if (p.id == "LL-MXFP4-c1" || p.id == "LL-MXFP4-c16") keep.push_back(p);
  ASSERT_EQ(keep.size(), 2u);
  set.points = keep;
  set.fit_params = {"step_overhead_s"};
  const HardwareProfile hw = HardwareProfile::load("b300");
  const CalibrationFit a = fit_calibration(set, hw);
  for (CalibrationPoint& p : set.points)
    if (p.role == "held_out")
      for (auto& [m, v] : p.measured) v *= 10;
  const CalibrationFit b = fit_calibration(set, hw);
  EXPECT_DOUBLE_EQ(a.hw.step_overhead_s, b.hw.step_overhead_s);
  EXPECT_DOUBLE_EQ(a.loss, b.loss);
  EXPECT_GT(a.evaluations, 10);
}

TEST(Calibration, BadFilesNameTheKey) {
  const auto dir = std::filesystem::temp_directory_path() / "ds_calibration_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& text) {
    const auto path = dir / "set.json";
    std::ofstream(path) << text;
    return path.string();
  };
  auto message = [&](const std::string& text) {
    try {
      load_calibration(write(text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{}").find("`name`"), std::string::npos);
  const std::string head =
      R"({"name":"x","source":"s","hardware":"b300","fit":["memory_efficiency"],"deployments":{"d":)"
      R"({"model":"kimi-k3","gpus":8,"dcp":1,"kv_dtype":"bf16","scheduler":"mixed","step_tokens":8192}},)";
  EXPECT_NE(message(head + R"("points":[{"id":"p","role":"guess"}]})").find("`role`"), std::string::npos);
  EXPECT_NE(message(head + R"("points":[{"id":"p","role":"fit","deployment":"nope"}]})").find("nope"),
            std::string::npos);
  const std::string bad_fit = R"({"name":"x","source":"s","hardware":"b300","fit":["hbm_bytes"]})";
  EXPECT_NE(message(bad_fit).find("hbm_bytes"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ds
