// OfflineBound on hand-built timelines (exact Belady values) and on replays: realized <= bound
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

// Page 4 tokens, 4 bytes; request 1 holds a 12-token prompt from t = 0 to 2; request 2 (the same 12
// tokens + 5) is admitted at t = 12: its 3 reusable pages must stay in the cache over [2, 12], where
// nothing runs, so at most budget / 4 pages of them (fractionally) can.
TEST(OfflineBound, PagesHeldOverTheGapFitTheBudget) {
  const auto p1 = tokens(12), p2 = tokens(17);
  for (double budget : {0.5, 2.0, 8.0, 100.0}) {
    OfflineBound b(4, budget, 4.0, 0.0);
    b.admit(1, OfflineBound::page_keys(p1, 4, true), true, 0);
    b.prefill_done(1, 1);
    b.finish(1, p1, 2);
    b.admit(2, OfflineBound::page_keys(p2, 4, true), true, 12);
    EXPECT_NEAR(b.bound_hit_tokens(12), std::min(3.0, budget / 4.0) * 4, 1e-9) << "budget " << budget;
  }
}

// Capacity cannot move between times: one page of room, two pages released at t = 2, one reused
// at t = 3 and one at t = 12. Only one can be held over [2, 3]; Belady keeps the sooner reuse, so
// the bound is one page (a byte-second knapsack would have paid for both with the idle room later).
TEST(OfflineBound, BeladyKeepsTheSoonerReuse) {
  const auto a = tokens(5, 0), c = tokens(5, 100);
  auto bound = [&](double budget) {
    OfflineBound b(4, budget, 4.0, 0.0);
    b.admit(1, OfflineBound::page_keys(a, 4, true), false, 0);
    b.admit(2, OfflineBound::page_keys(c, 4, true), false, 0);
    b.finish(1, a, 2);
    b.finish(2, c, 2);
    b.admit(3, OfflineBound::page_keys(c, 4, true), true, 3);
    b.admit(4, OfflineBound::page_keys(a, 4, true), true, 12);
    return b.bound_hit_tokens(12);
  };
  EXPECT_DOUBLE_EQ(bound(4.0), 4.0);  // one page of room: the reuse at t = 3 only
  EXPECT_DOUBLE_EQ(bound(8.0), 8.0);  // two pages of room: both
}

// Decoded pages are running memory: request 2 (prompt of 5 tokens, one page keyed) decodes up to 8
// tokens while request 1's 3 pages wait over [2, 12] for request 3. A decoded page counts from the
// moment the token after it is sampled (its last token's KV exists then), until the request finishes.
TEST(OfflineBound, DecodedPagesAreRunningMemory) {
  const auto p1 = tokens(13), p2 = tokens(5, 100);
  auto bound = [&](int n_sampled) {
    OfflineBound b(4, 5 * 4.0, 4.0, 0.0);  // room for 5 pages
    b.admit(1, OfflineBound::page_keys(p1, 4, true), false, 0);
    b.finish(1, p1, 2);
    b.admit(2, OfflineBound::page_keys(p2, 4, true), false, 3, {p2.begin() + 4, p2.end()});
    b.prefill_done(2, 3);
    for (int i = 0; i < n_sampled; ++i) b.sampled(2, 200 + i, 4);
    b.admit(3, OfflineBound::page_keys(p1, 4, true), true, 12);
    return b.bound_hit_tokens(12);
  };
  EXPECT_DOUBLE_EQ(bound(0), 12.0);  // 1 running page: the 3 reused pages fit over [2, 12]
  EXPECT_DOUBLE_EQ(bound(3), 12.0);  // tail: 1 prompt token + 2 computed decoded ones, no page yet
  EXPECT_DOUBLE_EQ(bound(4), 12.0);  // one decoded page: 2 running, the 3 still fit
  EXPECT_DOUBLE_EQ(bound(8), 8.0);   // two decoded pages: 3 running, room for 2 of the 3 from t = 4
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
    for (int64_t budget : {30000, 80000})
      for (int64_t page_tokens : {16, 64}) {  // 16: hits finer than the bound's 64-token default
        ReplayConfig cfg = test::k3_config(
            4, budget, retention, std::string(retention) == "boundary-aware" ? "boundary-aware" : "leaf-lru");
        cfg.cache.page_tokens = page_tokens;
        const RunMetrics m = run_replay(trace, test::k3_node().cost, cfg);
        SCOPED_TRACE(std::string(retention) + " budget " + std::to_string(budget) + " page " +
                     std::to_string(page_tokens));
        ASSERT_GT(m.n_prompt_tokens, 0);
        EXPECT_LE(m.realized_hit_rate, m.offline_bound_hit_rate + 1e-9);
        EXPECT_LE(m.offline_bound_hit_rate, m.theoretical_hit_rate + 1e-9);
      }
}

}  // namespace
}  // namespace ds
