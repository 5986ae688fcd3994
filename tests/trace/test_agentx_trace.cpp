// synthetic:agentx: deterministic, its fitted targets reached, branches well formed.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/agentx_trace.h"
#include "trace/trace_stats.h"

namespace ds {
namespace {

TEST(AgentxTrace, DeterministicForASeed) {
  const Trace a = load_trace("synthetic:agentx,sessions=6,seed=3");
  const Trace b = load_trace("synthetic:agentx,sessions=6,seed=3");
  const Trace c = load_trace("synthetic:agentx,sessions=6,seed=4");
  ASSERT_EQ(a.sessions.size(), 6u);
  ASSERT_EQ(a.sessions.size(), b.sessions.size());
  for (size_t s = 0; s < a.sessions.size(); ++s) {
    ASSERT_EQ(a.sessions[s].turns.size(), b.sessions[s].turns.size());
    for (size_t t = 0; t < a.sessions[s].turns.size(); ++t) {
      EXPECT_EQ(a.sessions[s].turns[t].n_input_tokens, b.sessions[s].turns[t].n_input_tokens);
      EXPECT_EQ(a.sessions[s].turns[t].hash_ids, b.sessions[s].turns[t].hash_ids);
    }
  }
  EXPECT_NE(trace_depth(a).n_requests, trace_depth(c).n_requests);
}

// The default trace reaches the published corpus statistics it is fitted to (agentx_trace.h).
TEST(AgentxTrace, DefaultsReachTheCorpusTargets) {
  const Trace t = load_trace("synthetic:agentx");
  const TraceDepth d = trace_depth(t);
  EXPECT_EQ(d.n_sessions, 48);
  EXPECT_NEAR(d.median_root_context_tokens, 256000, 256000 * 0.05);
  EXPECT_NEAR(d.root_over_256k, 0.5, 0.05);
  EXPECT_NEAR(d.subagent_share, 0.42, 0.08);
  EXPECT_NEAR(d.median_output_tokens, 444, 444 * 0.1);
  EXPECT_NEAR(d.median_root_turns, 65, 65 * 0.25);
  // Not fitted: the pooled median input, against the 142k SemiAnalysis reports.
  EXPECT_NEAR(d.median_input_tokens, 142000, 142000 * 0.2);
}

TEST(AgentxTrace, BranchesSpawnAndJoinInsideTheirSession) {
  const Trace t = load_trace("synthetic:agentx,sessions=8");
  int64_t n_branches = 0;
  for (const TraceSession& s : t.sessions) {
    for (const TraceBranch& b : s.branches) {
      ++n_branches;
      EXPECT_GE(b.spawn_after, 0);
      EXPECT_LT(size_t(b.spawn_after), s.turns.size());
      EXPECT_TRUE(b.join_before == -1 ||
                  (b.join_before > b.spawn_after && size_t(b.join_before) < s.turns.size()));
      EXPECT_FALSE(b.turns.empty());
    }
    // Root prompts grow turn over turn, each on the shared system prompt block.
    for (size_t i = 1; i < s.turns.size(); ++i)
      EXPECT_EQ(s.turns[i].hash_ids.front(), s.turns[0].hash_ids.front());
  }
  EXPECT_GT(n_branches, 0);
}

TEST(AgentxTrace, BadParams) {
  EXPECT_THROW(load_trace("synthetic:agentx,sessions=0"), Error);
  EXPECT_THROW(load_trace("synthetic:agentx,bogus=1"), Error);
}

}  // namespace
}  // namespace ds
