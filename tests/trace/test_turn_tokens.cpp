// turn_tokens: deterministic ids per (block id, position), namespace separation, truncation.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/trace.h"

namespace ds {
namespace {

TEST(TurnTokens, GoldenValues) {
  // Computed with an independent Python implementation of splitmix64 / FNV-1a.
  EXPECT_EQ(name_namespace("trace_0001"), 0xf74f496b5a22a4a0ULL);
  uint64_t b = namespaced_block_id(name_namespace("trace_0001"), 1);
  EXPECT_EQ(b, 0x781611b4379bbb35ULL);
  TraceTurn turn;
  turn.n_input_tokens = 64;
  turn.hash_ids = {b};
  std::vector<int32_t> t = turn_tokens(turn, 64);
  ASSERT_EQ(t.size(), 64u);
  EXPECT_EQ(t[0], 1426423549);
  EXPECT_EQ(t[1], 424204835);
  EXPECT_EQ(t[2], 1960258565);
  EXPECT_EQ(t[3], 601147344);
  EXPECT_EQ(t[63], 318195164);
  EXPECT_EQ(block_token_id(12345, 0), 33992720);
  EXPECT_EQ(block_token_id(12345, 1), 1814530826);
}

TEST(TurnTokens, SharedBlockPrefixGivesSharedTokenPrefix) {
  TraceTurn a, b;
  a.n_input_tokens = 150;  // 2 full blocks + 22-token tail
  a.hash_ids = {11, 12, 13};
  b.n_input_tokens = 200;
  b.hash_ids = {11, 12, 99, 100};
  std::vector<int32_t> ta = turn_tokens(a, 64), tb = turn_tokens(b, 64);
  ASSERT_EQ(ta.size(), 150u);
  ASSERT_EQ(tb.size(), 200u);
  EXPECT_TRUE(std::equal(ta.begin(), ta.begin() + 128, tb.begin()));
  EXPECT_NE(std::vector<int32_t>(ta.begin() + 128, ta.end()),
            std::vector<int32_t>(tb.begin() + 128, tb.begin() + 150));
  EXPECT_EQ(turn_tokens(a, 64), ta);  // deterministic
  // A partial block's tokens are a prefix of the same block id's full tokens.
  TraceTurn c = a;
  c.n_input_tokens = 192;
  std::vector<int32_t> tc = turn_tokens(c, 64);
  EXPECT_TRUE(std::equal(ta.begin(), ta.end(), tc.begin()));
  for (int32_t x : tb) EXPECT_GE(x, 0);
}

TEST(TurnTokens, NamespacesSeparateEqualLocalIds) {
  uint64_t s1 = name_namespace("trace_0001"), s2 = name_namespace("trace_0002");
  TraceTurn a, b;
  a.n_input_tokens = b.n_input_tokens = 64;
  a.hash_ids = {namespaced_block_id(s1, 1)};
  b.hash_ids = {namespaced_block_id(s2, 1)};
  std::vector<int32_t> ta = turn_tokens(a, 64), tb = turn_tokens(b, 64);
  int same = 0;
  for (size_t i = 0; i < 64; ++i) same += ta[i] == tb[i];
  EXPECT_EQ(same, 0);
  // Positions inside a block differ too (no run of equal tokens).
  EXPECT_NE(ta[0], ta[1]);
}

TEST(TurnTokens, TooFewHashIdsIsAnError) {
  TraceTurn a;
  a.n_input_tokens = 65;
  a.hash_ids = {1};
  EXPECT_THROW(turn_tokens(a, 64), Error);
  EXPECT_THROW(turn_tokens(a, 0), Error);
}

}  // namespace
}  // namespace ds
