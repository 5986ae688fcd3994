// PrefixOracle on token prompts: page granularity, the whole-prefix rule and "the last prompt token
// is always computed", with hand-counted hits.
#include <gtest/gtest.h>

#include <vector>

#include "core/check.h"
#include "trace/prefix_oracle.h"

namespace ds {
namespace {

std::vector<int32_t> seq(int32_t first, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = first + i;
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixOracle, CountsWholePagesOfAWholePrefixAndNeverTheLastToken) {
  PrefixOracle o(4);
  EXPECT_EQ(o.observe(seq(0, 10)), 0);                   // pages [0..4) [4..8) recorded; 2 tokens partial
  EXPECT_EQ(o.observe(seq(0, 10)), 8);                   // both pages; the partial tail is not cached
  EXPECT_EQ(o.observe(seq(0, 8)), 4);                    // 8 tokens = 2 pages, but token 7 is computed
  EXPECT_EQ(o.observe(seq(0, 9)), 8);                    // token 8 computed, both pages hit
  EXPECT_EQ(o.observe(cat(seq(0, 4), seq(100, 8))), 4);  // second page differs: stop there
  EXPECT_EQ(o.observe(cat(seq(100, 4), seq(4, 4))), 0);  // page [4..8) hit only after page [0..4)
  EXPECT_EQ(o.observe({}), 0);
  EXPECT_THROW(PrefixOracle(0), Error);
}

TEST(PrefixOracle, BlockPromptsHitEveryMatchingLeadingBlock) {
  PrefixOracle o(1);
  const std::vector<uint64_t> a{7, 8, 9}, b{7, 8, 5}, c{8, 9};
  EXPECT_EQ(o.observe_blocks(a), 0);
  EXPECT_EQ(o.observe_blocks(a), 3);  // no last-token rule for blocks
  EXPECT_EQ(o.observe_blocks(b), 2);
  EXPECT_EQ(o.observe_blocks(c), 0);  // [8] was never a first block
}

}  // namespace
}  // namespace ds
