// AgentxHarness schedules on hand-built sessions, driven by a fake server where every request takes
// a fixed service time: branch spawn / join, concurrency counted in session trees, recycling with a
// fresh salt, trace idle-gap compression and the system idle cap, cache warm-up (one-token, no delays),
// drain, profiling, cool-down.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "replay/agentx_harness.h"

namespace ds {
namespace {

TraceTurn turn(double think_s) {
  TraceTurn t;
  t.think_time_s = think_s;
  t.n_input_tokens = 64;
  t.n_output_tokens = 1;
  return t;
}

// Root: 4 turns, 5 s think. Branch 0: spawned after root turn 0, 2 turns (0.5 s offset, 1 s think),
// joined by root turn 2.
Trace one_tree() {
  Trace tr;
  tr.source = "test";
  TraceSession s;
  s.id = "tree";
  for (int i = 0; i < 4; ++i) s.turns.push_back(turn(5));
  TraceBranch b;
  b.spawn_after = 0;
  b.join_before = 2;
  b.start_offset_s = 0.5;
  b.turns = {turn(0), turn(1)};
  s.branches.push_back(b);
  tr.sessions.push_back(s);
  return tr;
}

struct Sent {
  AgentxRequest r;
  double send_s = 0, done_s = 0;
};

// Runs the harness to the end against a server that answers every request after service_s.
std::vector<Sent> drive(AgentxHarness& h, double service_s) {
  std::vector<Sent> log;
  std::vector<size_t> in_flight;
  double now = 0;
  for (int guard = 0; guard < 100000 && !h.finished(); ++guard) {
    while (auto r = h.take_due(now)) {
      log.push_back({*r, now, now + service_s});
      in_flight.push_back(log.size() - 1);
    }
    double next = h.next_event_s();
    for (size_t i : in_flight) next = std::min(next, log[i].done_s);
    if (!std::isfinite(next)) break;
    now = std::max(now, next);
    std::sort(in_flight.begin(), in_flight.end(),
              [&](size_t a, size_t b) { return log[a].done_s < log[b].done_s; });
    while (!in_flight.empty() && log[in_flight.front()].done_s <= now) {
      h.done(log[in_flight.front()].r, log[in_flight.front()].done_s);
      in_flight.erase(in_flight.begin());
    }
  }
  return log;
}

AgentxOptions from_start(double profile_s, double cache_warmup_s = 0) {
  AgentxOptions o;
  o.cache_warmup_s = cache_warmup_s;
  o.profile_s = profile_s;
  o.start_frac_lo = o.start_frac_hi = 0;  // every lane starts at root turn 0
  return o;
}

TEST(AgentxHarness, BranchesRunBesideTheRootAndTheJoinWaits) {
  const Trace tr = one_tree();
  AgentxHarness h(tr, 1, 1, from_start(1000));
  const auto log = drive(h, 2.0);
  ASSERT_TRUE(h.finished());
  // Snapshot warm-up: root turn 0 at t = 0, then profiling starts at t = 2 when it drains.
  ASSERT_GE(log.size(), 6u);
  EXPECT_TRUE(log[0].r.warmup);
  EXPECT_EQ(log[0].r.branch, -1);
  EXPECT_DOUBLE_EQ(h.profile_start_s(), 2.0);
  // First play, in order of sending: branch 0 turn 0 at 2.5, root turn 1 at 7 (5 s think, in
  // parallel: the branch does not count toward concurrency), branch turn 1 at 5.5 (1 s think).
  auto find = [&](uint64_t salt, int branch, size_t t) {
    for (const Sent& s : log)
      if (s.r.salt == salt && s.r.branch == branch && s.r.turn == t) return s;
    ADD_FAILURE() << "no request salt " << salt << " branch " << branch << " turn " << t;
    return Sent{};
  };
  const uint64_t salt = log[0].r.salt;
  EXPECT_DOUBLE_EQ(find(salt, 0, 0).send_s, 2.5);
  EXPECT_DOUBLE_EQ(find(salt, 0, 1).send_s, 5.5);
  EXPECT_DOUBLE_EQ(find(salt, -1, 1).send_s, 7.0);
  // Root turn 2 joins the branch (done at 7.5): 5 s after root turn 1 finished (9), i.e. 14.
  EXPECT_DOUBLE_EQ(find(salt, -1, 2).send_s, 14.0);
  // The drained tree recycles the lane: the session again from turn 0 with a fresh salt, at once.
  const Sent last_root = find(salt, -1, 3);
  const Sent replay = find(salt + 1, -1, 0);
  EXPECT_DOUBLE_EQ(replay.send_s, last_root.done_s);
  EXPECT_FALSE(replay.r.warmup);
  for (const Sent& s : log) EXPECT_FALSE(s.r.one_token);
  // Live context (64 + 1 tokens a turn): the root's 65 when profiling starts; 65 or 130 while the
  // branch is unfinished, so the window's mean lies between.
  EXPECT_EQ(h.live_context_at_profile_start(), 65);
  EXPECT_GT(h.live_context_mean_tokens(), 65.0);
  EXPECT_LT(h.live_context_mean_tokens(), 130.0);
}

TEST(AgentxHarness, ConcurrencyCountsSessionTrees) {
  Trace tr = one_tree();
  tr.sessions.push_back(tr.sessions[0]);
  tr.sessions.push_back(tr.sessions[0]);
  AgentxHarness h(tr, 2, 7, from_start(200));
  const auto log = drive(h, 3.0);
  // At any time at most 2 root requests are in flight; roots + branches may exceed 2.
  int max_roots = 0, max_all = 0;
  for (const Sent& a : log) {
    int roots = 0, all = 0;
    for (const Sent& b : log)
      if (b.send_s <= a.send_s && a.send_s < b.done_s) ++all, roots += b.r.branch < 0 ? 1 : 0;
    max_roots = std::max(max_roots, roots);
    max_all = std::max(max_all, all);
  }
  EXPECT_EQ(max_roots, 2);
  EXPECT_GT(max_all, 2);
}

TEST(AgentxHarness, IdleGapIsCappedWhenNothingIsInFlight) {
  Trace tr;
  tr.source = "test";
  TraceSession s;
  for (int i = 0; i < 5; ++i) s.turns.push_back(turn(100));
  tr.sessions.push_back(s);
  AgentxOptions o = from_start(1000);
  o.trace_idle_cap_s = 0;  // only the system idle cap acts
  AgentxHarness h(tr, 1, 1, o);
  const auto log = drive(h, 1.0);
  ASSERT_GE(log.size(), 3u);
  // After the warm-up (0-1 s) the next turn, 100 s later in the trace, goes after the 10 s cap.
  EXPECT_DOUBLE_EQ(log[1].send_s, 11.0);
  EXPECT_DOUBLE_EQ(log[2].send_s, 22.0);
  EXPECT_GT(h.n_idle_shifts(), 0);
  EXPECT_NEAR(h.idle_skipped_s(), 90.0 * double(h.n_idle_shifts()), 1e-9);
}

// Root starts at 0, 100, 103, 300 (think 100, 3, 197); a background branch spawned after root turn 0
// starts at 50 and 80. With a 10 s trace idle cap the merged start timeline 0, 50, 80, 100, 103, 300
// becomes 0, 10, 20, 30, 33, 43: every delay shrinks by the compression between its two starts.
TEST(AgentxHarness, TraceIdleGapsAreCompressedOnTheMergedStartTimeline) {
  Trace tr;
  tr.source = "test";
  TraceSession s;
  const double root_at[] = {0, 100, 103, 300};
  for (int i = 0; i < 4; ++i) {
    s.turns.push_back(turn(i == 0 ? 0 : root_at[i] - root_at[i - 1]));
    s.turns.back().arrival_s = root_at[i];
  }
  TraceBranch b;
  b.spawn_after = 0;
  b.join_before = -1;
  b.start_offset_s = 50;
  b.turns = {turn(0), turn(30)};
  b.turns[0].arrival_s = 50;
  b.turns[1].arrival_s = 80;
  s.branches.push_back(b);
  tr.sessions.push_back(s);
  AgentxHarness h(tr, 1, 1, from_start(1000));
  const auto log = drive(h, 0.0);
  auto sent_at = [&](int branch, size_t t) {
    for (const Sent& x : log)
      if (x.r.branch == branch && x.r.turn == t && x.r.salt == log[0].r.salt) return x.send_s;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(sent_at(-1, 0), 0.0);
  EXPECT_DOUBLE_EQ(sent_at(0, 0), 10.0);
  EXPECT_DOUBLE_EQ(sent_at(0, 1), 20.0);
  EXPECT_DOUBLE_EQ(sent_at(-1, 1), 30.0);
  EXPECT_DOUBLE_EQ(sent_at(-1, 2), 33.0);
  EXPECT_DOUBLE_EQ(sent_at(-1, 3), 43.0);
  // Off: the recorded delays (the system idle cap alone still bounds a fully idle gap).
  AgentxOptions off = from_start(1000);
  off.trace_idle_cap_s = 0;
  off.system_idle_cap_s = 1000;
  AgentxHarness raw(tr, 1, 1, off);
  const auto raw_log = drive(raw, 0.0);
  double r1 = -1;
  for (const Sent& x : raw_log)
    if (x.r.branch < 0 && x.r.turn == 1 && x.r.salt == raw_log[0].r.salt) r1 = x.send_s;
  EXPECT_DOUBLE_EQ(r1, 100.0);
}

TEST(AgentxHarness, CacheWarmupSendsOneTokenTurnsWithoutDelaysThenDrains) {
  Trace tr;
  tr.source = "test";
  TraceSession s;
  for (int i = 0; i < 50; ++i) s.turns.push_back(turn(30));
  tr.sessions.push_back(s);
  AgentxHarness h(tr, 1, 1, from_start(100, /*cache_warmup_s=*/20));
  const auto log = drive(h, 3.0);
  // Snapshot warm-up 0-3; cache warm-up from 3 to 23: back-to-back one-token turns (3, 6, ... 21);
  // the one in flight at 23 drains (to 24); profiling starts at 24 with the recorded 30 s delay
  // (capped to the 10 s idle gap).
  EXPECT_TRUE(log[0].r.warmup && !log[0].r.one_token);
  int n_cache_warmup = 0;
  for (const Sent& x : log)
    if (x.r.one_token) {
      ++n_cache_warmup;
      EXPECT_TRUE(x.r.warmup);
      EXPECT_LT(x.send_s, 23.0);
    }
  EXPECT_EQ(n_cache_warmup, 7);
  EXPECT_DOUBLE_EQ(h.profile_start_s(), 24.0);
  const auto first_measured = std::find_if(log.begin(), log.end(), [](const Sent& x) { return !x.r.warmup; });
  ASSERT_NE(first_measured, log.end());
  EXPECT_DOUBLE_EQ(first_measured->send_s, 34.0);
  // Nothing starts after the profiling window; what is in flight then finishes (cool-down).
  for (const Sent& x : log) EXPECT_LT(x.send_s, 124.0);
  EXPECT_TRUE(h.finished());
}

TEST(AgentxHarness, SnapshotStartSkipsPastBranches) {
  Trace tr = one_tree();
  AgentxOptions o = from_start(30);
  o.start_frac_lo = o.start_frac_hi = 0.5;  // start at root turn 2: branch 0 (after turn 0) is past
  AgentxHarness h(tr, 1, 1, o);
  const auto log = drive(h, 1.0);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0].r.turn, 2u);
  for (const Sent& x : log)
    if (x.r.salt == log[0].r.salt) EXPECT_EQ(x.r.branch, -1);
}

TEST(AgentxHarness, RejectsOpenLoopTracesAndBadOptions) {
  Trace open = one_tree();
  open.closed_loop = false;
  EXPECT_THROW(AgentxHarness(open, 1, 1, AgentxOptions{}), Error);
  const Trace tr = one_tree();
  EXPECT_THROW(AgentxHarness(tr, 0, 1, AgentxOptions{}), Error);
  AgentxOptions bad;
  bad.start_frac_lo = 0.8;
  bad.start_frac_hi = 0.2;
  EXPECT_THROW(AgentxHarness(tr, 1, 1, bad), Error);
}

}  // namespace
}  // namespace ds
