// Fixed-length random workload (random:): counts, lengths, no shared prefix, params and errors.
#include <gtest/gtest.h>

#include <set>

#include "core/check.h"
#include "trace/random_trace.h"
#include "trace/trace_stats.h"

namespace ds {
namespace {

TEST(RandomTrace, FixedLengthsAndNoSharedPrefix) {
  Trace t = load_trace("random:input=8192,output=1024,n=20");
  ASSERT_EQ(t.sessions.size(), 20u);
  EXPECT_TRUE(t.closed_loop);
  EXPECT_TRUE(t.fixed_length);
  std::set<uint64_t> first_blocks;
  for (const TraceSession& s : t.sessions) {
    ASSERT_EQ(s.turns.size(), 1u);
    EXPECT_EQ(s.turns[0].n_input_tokens, 8192);
    EXPECT_EQ(s.turns[0].n_output_tokens, 1024);
    EXPECT_EQ(s.turns[0].hash_ids.size(), 128u);
    first_blocks.insert(s.turns[0].hash_ids[0]);
  }
  EXPECT_EQ(first_blocks.size(), 20u);
  EXPECT_EQ(theoretical_hit_rate(t), 0.0);
}

TEST(RandomTrace, RangeRatioDrawsLengthsInRangeDeterministically) {
  RandomTraceParams p = parse_random_params("input=1000,output=100,n=200,range=0.5,seed=3");
  Trace a = generate_random_trace(p), b = generate_random_trace(p);
  int64_t lo = 1000, hi = 0;
  for (size_t i = 0; i < a.sessions.size(); ++i) {
    const TraceTurn& t = a.sessions[i].turns[0];
    EXPECT_EQ(t.n_input_tokens, b.sessions[i].turns[0].n_input_tokens);
    EXPECT_GE(t.n_input_tokens, 500);
    EXPECT_LE(t.n_input_tokens, 1000);
    EXPECT_GE(t.n_output_tokens, 50);
    EXPECT_LE(t.n_output_tokens, 100);
    lo = std::min(lo, t.n_input_tokens), hi = std::max(hi, t.n_input_tokens);
  }
  EXPECT_LT(lo, 600);  // 200 uniform draws cover the range
  EXPECT_GT(hi, 900);
}

TEST(RandomTrace, BadParamsNameTheKey) {
  EXPECT_THROW(parse_random_params("input=0"), Error);
  EXPECT_THROW(parse_random_params("range=1.5"), Error);
  EXPECT_THROW(parse_random_params("prompts=3"), Error);
  EXPECT_THROW(parse_random_params("n"), Error);
  try {
    parse_random_params("output=abc");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output=abc"), std::string::npos);
  }
}

}  // namespace
}  // namespace ds
