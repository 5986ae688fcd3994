// `replay --executor model --compare-sim`: the live CPU engine and the simulator replay the same
// requests on the same scheduler and cache, so they hit the cache identically (the benchmark's
// premise); the simulator's points carry its label and a positive virtual time.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

const std::string kCli = DS_CLI;
const std::string kTiny = std::string(DS_TEST_DATA_DIR) + "/golden/kimi-linear-tiny";

std::string run_json(const std::string& args) {
  // Passive OpenMP waits: on a busy CI machine spinning threads make the live runs many times slower.
  FILE* p = ::popen(("OMP_WAIT_POLICY=passive '" + kCli + "' " + args + " 2>/dev/null").c_str(), "r");
  std::string out;
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << args << "\n" << out;
  return out;
}

// Replays a small trace live and simulated; returns the runs (live first, then simulated).
nlohmann::json compare_runs(const std::string& budget_tokens) {
  const std::string args =
      "replay --executor model --model '" + kTiny +
      "' --compare-sim h200 --json --harness bench --concurrency 1,2 " +
      "--trace synthetic:sessions=6,turns=3,input=320,output=6,system=64,think=0,seed=3 --kv-budget-tokens " +
      budget_tokens;
  const std::string out = run_json(args);
  return nlohmann::json::parse(out, nullptr, false)["runs"];
}

TEST(ReplayCompare, LiveAndSimulatedHitTheCacheAlike) {
  // Ample budget (nothing evicted) and a tight one (checkpoints dropped, lower hit rate at c=2): the hit
  // rates and request counts agree at each concurrency whatever the step times.
  for (const std::string budget : {"65536", "6144"}) {
    const nlohmann::json runs = compare_runs(budget);
    ASSERT_TRUE(runs.is_array()) << budget;
    ASSERT_EQ(runs.size(), 4u) << budget;
    for (size_t i = 0; i < 2; ++i) {
      const nlohmann::json &live = runs[i], &sim = runs[i + 2];
      EXPECT_EQ(live["label"], "model");
      EXPECT_EQ(sim["label"], "sim:h200");
      EXPECT_EQ(live["concurrency"], sim["concurrency"]);
      EXPECT_EQ(live["harness"], "bench");
      EXPECT_EQ(live["n_requests"], sim["n_requests"]) << budget;
      EXPECT_GT(live["n_requests"].get<int>(), 0);
      EXPECT_EQ(live["n_prompt_tokens"], sim["n_prompt_tokens"]) << budget;
      EXPECT_EQ(live["n_hit_tokens"], sim["n_hit_tokens"]) << budget << " c=" << live["concurrency"];
      EXPECT_EQ(live["n_rejected"], sim["n_rejected"]) << budget;
      EXPECT_GT(sim["elapsed_virtual_s"].get<double>(), 0.0);
    }
    if (budget == "65536") EXPECT_GT(runs[0]["n_hit_tokens"].get<int>(), 0);
  }
}

}  // namespace
