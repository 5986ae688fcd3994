// Synthetic agentic generator: determinism per seed, the published medians, growing prompts on a
// shared system prompt.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/synthetic_trace.h"
#include "trace/trace_stats.h"

namespace ds {
namespace {

bool same(const Trace& a, const Trace& b) {
  if (a.sessions.size() != b.sessions.size()) return false;
  for (size_t s = 0; s < a.sessions.size(); ++s) {
    const auto &x = a.sessions[s].turns, &y = b.sessions[s].turns;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].n_input_tokens != y[i].n_input_tokens || x[i].n_output_tokens != y[i].n_output_tokens ||
          x[i].think_time_s != y[i].think_time_s || x[i].hash_ids != y[i].hash_ids)
        return false;
  }
  return true;
}

TEST(SyntheticTrace, DeterministicForASeed) {
  Trace a = load_trace("synthetic:sessions=6,seed=7");
  Trace b = load_trace("synthetic:seed=7,sessions=6");
  Trace c = load_trace("synthetic:sessions=6,seed=8");
  EXPECT_TRUE(same(a, b));
  EXPECT_FALSE(same(a, c));
  EXPECT_EQ(a.source,
            "synthetic:sessions=6,turns=65,input=142000,output=444,system=17216,think=10,context=1000000,"
            "seed=7,block=64");
}

// Defaults reproduce the published medians by construction: 142k input tokens per turn (calibrated),
// 444 output tokens per turn and 65 turns per session (centred draws; rounding only).
TEST(SyntheticTrace, MediansMatchTheSeed) {
  Trace t = load_trace("synthetic:sessions=61,seed=3");
  TraceSummary s = summarize(t);
  EXPECT_EQ(s.n_sessions, 61);
  EXPECT_NEAR(s.median_input_tokens, 142000, 142000 * 0.001);
  EXPECT_NEAR(s.median_output_tokens, 444, 1);
  EXPECT_NEAR(s.median_turns_per_session, 65, 1);
  Trace d = load_trace("synthetic");
  EXPECT_EQ(d.sessions.size(), 32u);
  EXPECT_NEAR(summarize(d).median_input_tokens, 142000, 142000 * 0.001);
}

TEST(SyntheticTrace, PromptsExtendThePreviousTurnOnASharedSystemPrompt) {
  SyntheticTraceParams p;
  p.sessions = 3;
  Trace t = generate_synthetic_trace(p);
  const int64_t bt = t.block_tokens;
  for (const TraceSession& s : t.sessions) {
    ASSERT_GE(s.turns.size(), 2u);
    for (size_t k = 1; k < s.turns.size(); ++k) {
      const TraceTurn &prev = s.turns[k - 1], &cur = s.turns[k];
      ASSERT_GT(cur.n_input_tokens, prev.n_input_tokens + prev.n_output_tokens) << s.id << " turn " << k;
      ASSERT_TRUE(std::equal(prev.hash_ids.begin(), prev.hash_ids.end(), cur.hash_ids.begin()))
          << s.id << " turn " << k;
      ASSERT_GT(cur.think_time_s, 0.0);
    }
    for (const TraceTurn& turn : s.turns)
      ASSERT_EQ(static_cast<int64_t>(turn.hash_ids.size()), (turn.n_input_tokens + bt - 1) / bt);
  }
  // 17216 system tokens = 269 shared blocks; block 269 is per session.
  for (size_t b = 0; b < 269; ++b)
    EXPECT_EQ(t.sessions[1].turns[0].hash_ids[b], t.sessions[0].turns[0].hash_ids[b]);
  EXPECT_NE(t.sessions[1].turns[0].hash_ids[269], t.sessions[0].turns[0].hash_ids[269]);
  // Nearly all of each prompt was seen in the previous turn.
  EXPECT_GT(theoretical_hit_rate(t), 0.95);
}

TEST(SyntheticTrace, CompactionKeepsPromptsWithinContext) {
  Trace t = load_trace("synthetic:sessions=8,input=60000,context=70000,system=1000,seed=2");
  bool compacted = false;
  for (const TraceSession& s : t.sessions)
    for (size_t k = 0; k < s.turns.size(); ++k) {
      EXPECT_LE(s.turns[k].n_input_tokens, 70000);
      if (k > 0 && s.turns[k].n_input_tokens < s.turns[k - 1].n_input_tokens) compacted = true;
    }
  EXPECT_TRUE(compacted);
}

TEST(SyntheticTrace, BadParams) {
  EXPECT_THROW(load_trace("synthetic:sessions=0"), Error);
  EXPECT_THROW(load_trace("synthetic:bogus=1"), Error);
  EXPECT_THROW(load_trace("synthetic:turns=x"), Error);
  EXPECT_THROW(load_trace("synthetic:input=100,system=200"), Error);
  EXPECT_THROW(load_trace("synthetic:think=-1"), Error);
  EXPECT_THROW(load_trace("synthetic:input=2000000"), Error);
  try {
    load_trace("synthetic:bogus=1");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "synthetic trace: unknown key `bogus` (keys: sessions, turns, input, output, system, think, "
              "context, seed, block)");
  }
}

}  // namespace
}  // namespace ds
