// Norms, activations, softmax and argmax against hand-computed values, and the vectorised norms and
// activations against plain per-element loops on lengths around every vector width.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/argmax.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/softmax.h"
#include "test_util.h"

namespace ds::cpu {
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

// Lengths that exercise full vectors, tails and single lanes for 8- and 16-lane paths.
constexpr int64_t kAwkward[] = {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000};

TEST(Activation, ArrayFormsMatchScalarOnAwkwardLengths) {
  for (int64_t n : kAwkward) {
    SCOPED_TRACE(n);
    const auto x = test::randn(size_t(n), uint32_t(n), 4.0f), u = test::randn(size_t(n), uint32_t(n + 1));
    std::vector<float> y(static_cast<size_t>(n) + 1, 7.0f), ref(static_cast<size_t>(n));
    silu(x.data(), n, y.data());
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = siluf(x[size_t(i)]);
    EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), size_t(n), 1e-7, 2e-6), 1.0);
    EXPECT_EQ(y[size_t(n)], 7.0f);  // nothing written past n
    sigmoid(x.data(), n, y.data());
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = sigmoidf(x[size_t(i)]);
    EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), size_t(n), 1e-7, 2e-6), 1.0);
    silu_mul(x.data(), u.data(), n, y.data());
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = siluf(x[size_t(i)]) * u[size_t(i)];
    EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), size_t(n), 1e-7, 2e-6), 1.0);
    EXPECT_EQ(y[size_t(n)], 7.0f);
  }
}

TEST(Norm, VectorFormsMatchScalarOnAwkwardLengths) {
  for (int64_t dim : kAwkward) {
    SCOPED_TRACE(dim);
    const int64_t rows = 3;
    const size_t n = size_t(rows * dim);
    const auto x = test::randn(n, uint32_t(dim), 2.0f), gate = test::randn(n, uint32_t(dim + 1));
    const auto w = test::randn(size_t(dim), uint32_t(dim + 2));
    // Per row, in double: 1 / sqrt(mean x² + eps) and 1 / sqrt(Σ x²).
    std::vector<double> inv(static_cast<size_t>(rows)), inv_l2(static_cast<size_t>(rows));
    const float eps = 1e-5f;
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += double(x[size_t(r * dim + i)]) * x[size_t(r * dim + i)];
      inv[size_t(r)] = 1.0 / std::sqrt(ss / double(dim) + eps);
      inv_l2[size_t(r)] = 1.0 / std::sqrt(ss);
    }
    std::vector<float> y(n), ref(n);
    rmsnorm(x.data(), rows, dim, w.data(), eps, y.data());
    for (size_t i = 0; i < n; ++i) ref[i] = float(x[i] * inv[i / size_t(dim)] * w[i % size_t(dim)]);
    EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), n, 1e-6, 1e-5), 1.0);
    rmsnorm_gated_sigmoid(x.data(), gate.data(), rows, dim, w.data(), eps, y.data());
    for (size_t i = 0; i < n; ++i) ref[i] *= sigmoidf(gate[i]);
    EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), n, 1e-6, 1e-5), 1.0);
    std::vector<float> z = x;
    l2norm_rows(z.data(), rows, dim, 0.0f);
    for (size_t i = 0; i < n; ++i) ref[i] = float(x[i] * inv_l2[i / size_t(dim)]);
    EXPECT_LE(test::max_scaled_err(z.data(), ref.data(), n, 1e-6, 1e-5), 1.0);
  }
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
}  // namespace ds::cpu
