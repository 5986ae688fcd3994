// SiTU-GLU: the formula in f64, the beta1·beta2 bound, unclipped up branch, array == fused layout, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "layers/situ.h"

using namespace ds;

namespace {
double situ_f64(double a, double b, double beta, double lbeta) {
  return beta * std::tanh(a / beta) / (1.0 + std::exp(-a)) * (lbeta * std::tanh(b / lbeta));
}
}  // namespace

TEST(K3Situ, MatchesFormulaInF64) {
  const SituParams p;  // beta 4, linear beta 25 (K3 config)
  for (float a : {-30.0f, -3.5f, -0.25f, 0.0f, 0.5f, 2.0f, 7.0f, 40.0f}) {
    for (float b : {-200.0f, -10.0f, -1.0f, 0.0f, 0.3f, 12.0f, 90.0f}) {
      const double want = situ_f64(a, b, 4.0, 25.0);
      EXPECT_NEAR(situ(a, b, p), want, 1e-6 * std::fabs(want) + 1e-7) << a << " " << b;
    }
  }
  // Exact anchors: a zero gate or up branch gives exactly 0; sigmoid(0) = 1/2.
  EXPECT_EQ(situ(0.0f, 5.0f, p), 0.0f);
  EXPECT_EQ(situ(3.0f, 0.0f, p), 0.0f);
}

TEST(K3Situ, BoundedByBetaProduct) {
  const SituParams p;
  EXPECT_NEAR(situ(1e4f, 1e4f, p), 100.0f, 1e-4f);
  EXPECT_NEAR(situ(1e4f, -1e4f, p), -100.0f, 1e-4f);
  EXPECT_EQ(situ(-1e4f, 1e4f, p), 0.0f);  // sigmoid underflows: the gate branch closes
  EXPECT_NEAR(situ(INFINITY, INFINITY, p), 100.0f, 1e-4f);
  for (float a = -50.0f; a <= 50.0f; a += 0.37f) EXPECT_LE(std::fabs(situ(a, 1e6f, p)), 100.0f);
}

TEST(K3Situ, UnclippedUpBranchWhenLinearBetaUnset) {
  SituParams p;
  p.linear_beta = 0.0f;
  const double want = 4.0 * std::tanh(1.5 / 4.0) / (1.0 + std::exp(-1.5)) * 300.0;
  EXPECT_NEAR(situ(1.5f, 300.0f, p), want, 1e-6 * want);
}

TEST(K3Situ, ArrayAndFusedLayoutsAgree) {
  const SituParams p{2.0f, 10.0f};
  const int T = 3, n = 5;
  std::vector<float> gate_up(T * 2 * n), gate(T * n), up(T * n), out(T * n), fused(T * n);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < n; ++i) {
      gate[t * n + i] = gate_up[t * 2 * n + i] = 0.7f * float(i - 2) + 0.3f * float(t);
      up[t * n + i] = gate_up[t * 2 * n + n + i] = 3.0f * float(2 - i) - float(t);
    }
  situ_glu(gate, up, out, p);
  situ_glu_fused(gate_up.data(), T, n, fused.data(), p);
  for (int i = 0; i < T * n; ++i) {
    EXPECT_EQ(out[i], fused[i]);
    EXPECT_NEAR(out[i], situ_f64(gate[i], up[i], 2.0, 10.0), 1e-6 * std::fabs(out[i]) + 1e-7);
  }
  situ_glu(gate, up, gate, p);  // in place
  EXPECT_EQ(gate, out);
}

TEST(K3Situ, BadInputThrows) {
  std::vector<float> a(3), b(4), o(3);
  EXPECT_THROW(situ_glu(a, b, o, SituParams{}), Error);
  EXPECT_THROW(situ_glu(a, a, o, SituParams{0.0f, 25.0f}), Error);
}
