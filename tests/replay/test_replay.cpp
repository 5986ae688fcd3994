// Replay loop on the simulated K3 node: determinism for a seed, realized == theoretical hit rate
// with an unbounded every-block cache, hit rate monotone in the memory budget, open loop.
#include <gtest/gtest.h>

#include "core/check.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "replay_fixture.h"

namespace ds {
namespace {

using test::extending_trace;
using test::k3_config;
using test::k3_node;

constexpr int64_t kUnbounded = int64_t{1} << 26;  // 67M tokens: nothing is ever evicted

TEST(Replay, DeterministicForASeed) {
  Trace trace = extending_trace(6, 6);
  ReplayConfig cfg = k3_config(3, 40000, "interval:4096");
  cfg.max_requests = 24;
  RunMetrics a = run_replay(trace, k3_node().cost, cfg);
  RunMetrics b = run_replay(trace, k3_node().cost, cfg);
  EXPECT_EQ(runs_json({a}), runs_json({b}));
  EXPECT_GT(a.n_requests, 0);
  EXPECT_GT(a.elapsed_virtual_s, 0);
  // Same results when the runs go through the threaded sweep.
  auto swept = run_sweep(trace, k3_node().cost, {cfg, cfg, cfg}, 2);
  for (const auto& r : swept) EXPECT_EQ(runs_json({r}), runs_json({a}));
}

TEST(Replay, UnboundedEveryBlockRealizesTheTheoreticalHitRate) {
  Trace trace = extending_trace(4, 6);
  for (int conc : {1, 2}) {
    ReplayConfig cfg = k3_config(conc, kUnbounded, "every-block");
    RunMetrics m = run_replay(trace, k3_node().cost, cfg);
    ASSERT_GT(m.n_requests, 0);
    EXPECT_GT(m.theoretical_hit_rate, 0.5);
    if (conc == 1) {
      EXPECT_EQ(m.n_hit_tokens, m.n_theoretical_hit_tokens) << "concurrency " << conc;
    } else {  // overlapping requests can only miss what is still in flight
      EXPECT_LE(m.n_hit_tokens, m.n_theoretical_hit_tokens);
    }
    EXPECT_EQ(m.n_kv_reachable_tokens, m.n_hit_tokens);  // a checkpoint on every page
    EXPECT_EQ(m.checkpoints_dropped, 0);
    EXPECT_EQ(m.n_preemptions, 0);
  }
}

// --live-output: the decoded tokens are the next prompt's, so pages completed by decoding hit the
// next turn (every-block, unbounded: realized = theoretical, both above the resent-history case).
TEST(Replay, LiveOutputDecodedPagesHitTheNextTurn) {
  Trace trace = extending_trace(3, 5);
  ReplayConfig cfg = k3_config(1, kUnbounded, "every-block");
  const RunMetrics resent = run_replay(trace, k3_node().cost, cfg);
  cfg.live_output = true;
  const RunMetrics live = run_replay(trace, k3_node().cost, cfg);
  EXPECT_GT(live.n_hit_tokens, resent.n_hit_tokens);
  EXPECT_GT(live.n_theoretical_hit_tokens, resent.n_theoretical_hit_tokens);
  EXPECT_EQ(live.n_hit_tokens, live.n_theoretical_hit_tokens);
  EXPECT_EQ(live.n_prompt_tokens, resent.n_prompt_tokens);
}

TEST(Replay, LargerBudgetNeverLowersTheHitRate) {
  Trace trace = extending_trace(8, 6);
  double previous = -1;
  for (int64_t budget : {20000, 40000, 80000, 160000, 320000}) {
    ReplayConfig cfg = k3_config(4, budget, "interval:8192");
    RunMetrics m = run_replay(trace, k3_node().cost, cfg);
    EXPECT_GE(m.realized_hit_rate, previous) << "budget " << budget;
    EXPECT_GE(m.realized_hit_rate, 0.0);
    EXPECT_LE(m.realized_hit_rate, m.theoretical_hit_rate + 1e-12);
    previous = m.realized_hit_rate;
  }
  EXPECT_GT(previous, 0.5);
}

TEST(Replay, WarmupRequestsAreExcludedAndLanesStartMidSession) {
  Trace trace = extending_trace(4, 8);
  ReplayConfig cfg = k3_config(4, kUnbounded, "every-block");
  cfg.max_requests = 8;  // 4 warm-ups + 4 measured
  RunMetrics m = run_replay(trace, k3_node().cost, cfg);
  EXPECT_EQ(m.n_warmup_requests, 4);
  EXPECT_EQ(m.n_requests, 4);
  // A measured turn follows its lane's warm-up turn, so it hits the whole previous prompt.
  EXPECT_GT(m.realized_hit_rate, 0.5);
  cfg.warmup = false;
  RunMetrics cold = run_replay(trace, k3_node().cost, cfg);
  EXPECT_EQ(cold.n_warmup_requests, 0);
  EXPECT_EQ(cold.n_requests, 8);
}

TEST(Replay, OpenLoopSendsByTimestamp) {
  Trace trace = extending_trace(3, 4);
  trace.closed_loop = false;
  for (size_t s = 0; s < trace.sessions.size(); ++s)
    for (size_t k = 0; k < trace.sessions[s].turns.size(); ++k)
      trace.sessions[s].turns[k].arrival_s = 30.0 * static_cast<double>(k) + static_cast<double>(s);
  ReplayConfig cfg = k3_config(1, kUnbounded, "every-block");
  RunMetrics m = run_replay(trace, k3_node().cost, cfg);
  EXPECT_EQ(m.concurrency, 0);
  EXPECT_EQ(m.n_requests, 12);
  EXPECT_EQ(m.n_warmup_requests, 0);
  EXPECT_GE(m.elapsed_virtual_s, 92.0);  // the last arrival is at 92 s
  EXPECT_GT(m.ttft_p50_s, 0);
  EXPECT_GT(m.tpot_p50_s, 0);
}

TEST(Replay, DurationStopsTheRun) {
  Trace trace = extending_trace(4, 8);
  ReplayConfig cfg = k3_config(2, kUnbounded, "every-block");
  cfg.duration_s = 20;
  RunMetrics m = run_replay(trace, k3_node().cost, cfg);
  EXPECT_GE(m.elapsed_virtual_s, 20);
  EXPECT_LT(m.elapsed_virtual_s, 25);  // stops within one step of the limit
}

TEST(Replay, BadConfigIsAnError) {
  Trace trace = extending_trace(1, 2);
  ReplayConfig cfg = k3_config(0, 10000, "every-block");
  EXPECT_THROW(run_replay(trace, k3_node().cost, cfg), Error);
  cfg = k3_config(1, 10000, "no-such-policy");
  EXPECT_THROW(run_replay(trace, k3_node().cost, cfg), Error);
  Trace empty;
  EXPECT_THROW(run_replay(empty, k3_node().cost, k3_config(1, 10000, "every-block")), Error);
}

}  // namespace
}  // namespace ds
