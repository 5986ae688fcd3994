// Norms, activations, softmax and argmax against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/argmax.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/softmax.h"
#include "test_util.h"

namespace ds {
namespace {

TEST(Norm, RmsNormHandComputed) {
  // x = [3, 4]: mean(x²) = 12.5; eps 0.5 -> 1/sqrt(13) ; weight [1, 2].
  std::vector<float> x{3, 4}, w{1, 2}, y(2);
  rmsnorm(x.data(), 1, 2, w.data(), 0.5f, y.data());
  EXPECT_FLOAT_EQ(y[0], 3.0f / std::sqrt(13.0f));
  EXPECT_FLOAT_EQ(y[1], 8.0f / std::sqrt(13.0f));
  rmsnorm(x.data(), 1, 2, nullptr, 0.5f, y.data());
  EXPECT_FLOAT_EQ(y[1], 4.0f / std::sqrt(13.0f));
}

TEST(Norm, GatedRmsNormAppliesSigmoidAfterNorm) {
  std::vector<float> x{3, 4, 1, 1}, gate{0, 2, -1, 0}, w{1, 2}, y(4);
  rmsnorm_gated_sigmoid(x.data(), gate.data(), 2, 2, w.data(), 0.0f, y.data());
  const float s = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(y[0], 3.0f * s * 0.5f);
  EXPECT_FLOAT_EQ(y[1], 4.0f * s * 2.0f * sigmoidf(2.0f));
  EXPECT_FLOAT_EQ(y[2], 1.0f * sigmoidf(-1.0f));
  EXPECT_FLOAT_EQ(y[3], 2.0f * 0.5f);
}

TEST(Norm, L2NormEpsInsideSqrt) {
  std::vector<float> x{3, 4, 0, 0};
  l2norm_rows(x.data(), 2, 2, 1e-6f);
  EXPECT_FLOAT_EQ(x[0], 3.0f / std::sqrt(25.0f + 1e-6f));
  EXPECT_FLOAT_EQ(x[1], 4.0f / std::sqrt(25.0f + 1e-6f));
  EXPECT_EQ(x[2], 0.0f);  // zero row stays zero, no NaN
}

TEST(Activation, Values) {
  EXPECT_FLOAT_EQ(siluf(0.0f), 0.0f);
  EXPECT_FLOAT_EQ(siluf(2.0f), 2.0f / (1.0f + std::exp(-2.0f)));
  EXPECT_FLOAT_EQ(softplusf(25.0f), 25.0f);  // above threshold 20: identity
  EXPECT_FLOAT_EQ(softplusf(0.0f), std::log(2.0f));
  EXPECT_FLOAT_EQ(softplusf(-30.0f), std::log1p(std::exp(-30.0f)));
  std::vector<float> g{1, -1}, u{2, 3}, y(2);
  silu_mul(g.data(), u.data(), 2, y.data());
  EXPECT_FLOAT_EQ(y[0], siluf(1.0f) * 2.0f);
  EXPECT_FLOAT_EQ(y[1], siluf(-1.0f) * 3.0f);
  sigmoid(g.data(), 2, y.data());
  EXPECT_FLOAT_EQ(y[0], 1.0f / (1.0f + std::exp(-1.0f)));
}

TEST(Softmax, StableAndNormalised) {
  std::vector<float> x{1000, 1001, 0, std::log(3.0f)}, y(4);
  softmax_rows(x.data(), 2, 2, y.data());
  EXPECT_FLOAT_EQ(y[0], 1.0f / (1.0f + std::exp(1.0f)));
  EXPECT_FLOAT_EQ(y[1], 1.0f / (1.0f + std::exp(-1.0f)));
  EXPECT_FLOAT_EQ(y[2], 0.25f);
  EXPECT_FLOAT_EQ(y[3], 0.75f);
}

TEST(Argmax, FirstMaxAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a{1, 5, 5, -2};
  EXPECT_EQ(argmax(a.data(), 4), 1);
  std::vector<float> b{nan, -1, 3, nan};
  EXPECT_EQ(argmax(b.data(), 4), 2);
  std::vector<float> c{nan, nan};
  EXPECT_EQ(argmax(c.data(), 2), 0);
}

}  // namespace
}  // namespace ds
