// Replay on the bundled Claude Code sample (data/traces): more device memory never lowers the
// realized hit rate, and an unbounded every-block cache realizes the theoretical rate exactly.
#include <gtest/gtest.h>

#include "replay/replay.h"
#include "replay_fixture.h"
#include "trace/trace.h"

namespace ds {
namespace {

const Trace& bundled() {
  static const Trace* trace = new Trace(load_trace("", TraceOptions{}));
  return *trace;
}

TEST(ReplayBundled, LargerBudgetNeverLowersTheHitRate) {
  double previous = -1;
  for (int64_t budget : {250000, 500000, 1000000, 2000000, 8000000}) {
    ReplayConfig cfg = test::k3_config(4, budget, "interval:32768");
    cfg.max_requests = 48;
    RunMetrics m = run_replay(bundled(), test::k3_node().cost, cfg);
    ASSERT_GT(m.n_requests, 0);
    EXPECT_GE(m.realized_hit_rate, previous) << "budget " << budget;
    EXPECT_LE(m.realized_hit_rate, m.theoretical_hit_rate + 1e-12);
    previous = m.realized_hit_rate;
  }
  EXPECT_GT(previous, 0.8);
}

TEST(ReplayBundled, UnboundedEveryBlockEqualsTheoretical) {
  ReplayConfig cfg = test::k3_config(1, int64_t{1} << 26, "every-block");
  cfg.max_requests = 40;
  RunMetrics m = run_replay(bundled(), test::k3_node().cost, cfg);
  ASSERT_GT(m.n_requests, 0);
  EXPECT_EQ(m.n_hit_tokens, m.n_theoretical_hit_tokens);
  EXPECT_DOUBLE_EQ(m.realized_hit_rate, m.theoretical_hit_rate);
  EXPECT_GT(m.theoretical_hit_rate, 0.8);
}

}  // namespace
}  // namespace ds
