// KDA gates: safe and softplus decay gates against hand values, the dispatch on gate_lower_bound,
// A_log narrowing, full- and low-rank output-gate logits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"
#include "layers/kda_gates.h"
#include "random_weights.h"

using namespace ds;
using ds::testing::randn;
using ds::testing::sig;

TEST(KdaGates, ALogNarrowsToHeads) {
  std::vector<float> stored(128, 0.0f);
  for (int i = 0; i < 96; ++i) stored[i] = 0.01f * float(i + 1);
  const auto a = a_log_heads(stored, 96, "layer 1 A_log");
  ASSERT_EQ(a.size(), 96u);
  EXPECT_EQ(a.front(), 0.01f);
  EXPECT_EQ(a.back(), 0.96f);
  EXPECT_THROW(a_log_heads(std::vector<float>(2), 3, "A_log"), Error);
}

TEST(KdaGates, KdaOutputGateFullAndLowRank) {
  std::mt19937 rng(11);
  const int D = 16, P = 12, R = 4, T = 3;
  const auto x = randn(rng, T * D), wf = randn(rng, P * D), wa = randn(rng, R * D), wb = randn(rng, P * R);
  KdaOutputGate full;
  full.g_proj = {wf.data(), DType::F32, P, D};
  full.validate(D, P);
  std::vector<float> got(T * P), want(T * P), low(T * R);
  full.logits(x.data(), T, got.data());
  cpu::linear_ref(x.data(), T, full.g_proj, want.data());
  for (int i = 0; i < T * P; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])));
  KdaOutputGate lr;
  lr.g_a = {wa.data(), DType::F32, R, D};
  lr.g_b = {wb.data(), DType::F32, P, R};
  lr.validate(D, P);
  lr.logits(x.data(), T, got.data());
  cpu::linear_ref(x.data(), T, lr.g_a, low.data());
  cpu::linear_ref(low.data(), T, lr.g_b, want.data());
  for (int i = 0; i < T * P; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])));
  EXPECT_THROW(full.validate(D, P + 1), Error);
  KdaOutputGate both = lr;
  both.g_proj = full.g_proj;
  EXPECT_THROW(both.validate(D, P), Error);
}
