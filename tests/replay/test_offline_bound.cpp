// OfflineBound on hand-built timelines (exact knapsack values) and on replays: realized <= bound
// <= theoretical for every policy and budget tried.
#include <gtest/gtest.h>

#include <numeric>

#include "replay/offline_bound.h"
#include "replay/replay.h"
#include "replay_fixture.h"

namespace ds {
namespace {

std::vector<int32_t> tokens(int n, int32_t first = 0) {
  std::vector<int32_t> t(size_t(n), 0);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Page 4 tokens, 1 byte; request 1 holds a 12-token prompt from t = 0 to 2; request 2 (the same 12
// tokens + 5) is admitted at t = 12: its 3 reusable pages each cost 10 byte-seconds of holding.
TEST(OfflineBound, KnapsackOverHoldingCosts) {
  const auto p1 = tokens(12), p2 = tokens(17);
  for (double budget : {0.5, 2.0, 100.0}) {
    OfflineBound b(4, budget, 4.0, 0.0);
    b.admit(1, OfflineBound::page_keys(p1, 4, true), true, 0);
    b.prefill_done(1, 1);
    b.finish(1, p1, 2);
    b.admit(2, OfflineBound::page_keys(p2, 4, true), true, 12);
    // Capacity: budget x 12 s, less request 1's 2 pages (prompt rule: [0, 11)) while running.
    const double capacity = budget * 12 - std::min(budget, 8.0) * 1;
    const double expect = std::min(3.0, std::max(0.0, capacity) / 40.0) * 4;
    EXPECT_NEAR(b.bound_hit_tokens(12), expect, 1e-9) << "budget " << budget;
  }
}

TEST(OfflineBound, APageHeldByARunningRequestIsFree) {
  OfflineBound b(4, 0.0, 4.0, 0.0);  // no room at all for the cache
  const auto p = tokens(12);
  b.admit(1, OfflineBound::page_keys(p, 4, true), false, 0);  // warm-up: its hits do not count
  b.admit(2, OfflineBound::page_keys(p, 4, true), true, 1);   // same prefix, while 1 runs
  EXPECT_DOUBLE_EQ(b.bound_hit_tokens(1), 8.0);               // pages inside [0, 11): 2
  b.admit(2, {}, true, 2);                                    // a re-admission is ignored
  EXPECT_DOUBLE_EQ(b.bound_hit_tokens(2), 8.0);
}

// A budget that forces eviction: every policy stays under the bound, the bound under the
// theoretical rate.
TEST(OfflineBound, ReplaysStayUnderIt) {
  const Trace trace = test::extending_trace(6, 8);
  for (const char* retention : {"interval:4096", "every-block", "boundary-aware"})
    for (int64_t budget : {30000, 80000}) {
      ReplayConfig cfg = test::k3_config(
          4, budget, retention, std::string(retention) == "boundary-aware" ? "boundary-aware" : "leaf-lru");
      const RunMetrics m = run_replay(trace, test::k3_node().cost, cfg);
      SCOPED_TRACE(std::string(retention) + " budget " + std::to_string(budget));
      ASSERT_GT(m.n_prompt_tokens, 0);
      EXPECT_LE(m.realized_hit_rate, m.offline_bound_hit_rate + 1e-9);
      EXPECT_LE(m.offline_bound_hit_rate, m.theoretical_hit_rate + 1e-9);
    }
}

}  // namespace
}  // namespace ds
