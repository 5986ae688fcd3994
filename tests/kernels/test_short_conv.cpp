// Causal depthwise short conv + SiLU with a carried window: hand-computed values, optimised ==
// reference, and one call == several calls carrying the state.
#include <gtest/gtest.h>

#include <vector>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/short_conv.h"
#include "test_util.h"

namespace ds::cpu {
namespace {

TEST(ShortConv, HandComputedWithState) {
  // C=1, W=3: state [1, 2] (oldest first), taps [a, b, c] = [1, 10, 100], x = [3, 4].
  // y0 = silu(1*1 + 10*2 + 100*3) = silu(321); y1 = silu(2 + 30 + 400) = silu(432); state [3, 4].
  std::vector<float> taps{1, 10, 100}, state{1, 2}, x{3, 4}, y(2);
  short_conv_silu(x.data(), 1, 2, 1, taps.data(), 3, state.data(), y.data(), 1);
  EXPECT_FLOAT_EQ(y[0], siluf(321.0f));
  EXPECT_FLOAT_EQ(y[1], siluf(432.0f));
  EXPECT_EQ(state, (std::vector<float>{3, 4}));
  // T=1 shifts the window by one.
  std::vector<float> x1{-1}, y1(1);
  short_conv_silu(x1.data(), 1, 1, 1, taps.data(), 3, state.data(), y1.data(), 1);
  EXPECT_FLOAT_EQ(y1[0], siluf(3.0f + 40.0f - 100.0f));
  EXPECT_EQ(state, (std::vector<float>{4, -1}));
}

TEST(ShortConv, MatchesReferenceAndSplitCalls) {
  const int64_t C = 67, W = 4, T = 23, stride = 80;
  const auto taps = test::randn(size_t(C * W), 1, 0.5f);
  const auto x = test::randn(size_t(T * stride), 2);
  const auto s0 = test::randn(size_t(C * (W - 1)), 3);
  std::vector<float> s_ref = s0, y_ref(size_t(T * C));
  short_conv_silu_ref(x.data(), stride, T, C, taps.data(), W, s_ref.data(), y_ref.data(), C);
  // One call, optimised path.
  std::vector<float> s1 = s0, y1(size_t(T * C));
  short_conv_silu(x.data(), stride, T, C, taps.data(), W, s1.data(), y1.data(), C);
  EXPECT_LE(test::max_abs_diff(y1.data(), y_ref.data(), y1.size()), 1e-6);
  EXPECT_EQ(s1, s_ref);
  // Pieces of 1, 2 and 20 tokens carrying the window.
  std::vector<float> s2 = s0, y2(size_t(T * C));
  int64_t t0 = 0;
  for (int64_t n : {1, 2, 20}) {
    short_conv_silu(x.data() + t0 * stride, stride, n, C, taps.data(), W, s2.data(), y2.data() + t0 * C, C);
    t0 += n;
  }
  EXPECT_LE(test::max_abs_diff(y2.data(), y_ref.data(), y2.size()), 1e-6);
  EXPECT_EQ(s2, s_ref);
}

TEST(ShortConv, RejectsBadShapes) {
  std::vector<float> v(64);
  EXPECT_THROW(short_conv_silu(v.data(), 2, 1, 4, v.data(), 4, v.data(), v.data(), 4), Error);
  EXPECT_THROW(short_conv_silu(v.data(), 4, 1, 4, v.data(), 0, v.data(), v.data(), 4), Error);
}

}  // namespace
}  // namespace ds::cpu
