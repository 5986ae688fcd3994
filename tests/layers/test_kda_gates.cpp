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

TEST(KdaGates, SafeGateValues) {
  // H = 2, K = 2: exp(A_log) = 2 and 0.5.
  const std::vector<float> a_log{std::log(2.0f), std::log(0.5f)}, dt{0.5f, -1.0f, 0.0f, 3.0f};
  const std::vector<float> f{-0.5f,  1.0f,    0.0f, -3.0f,  // z = 0 everywhere: g = lb/2
                             100.0f, -100.0f, 1.0f, -1.0f};
  std::vector<float> g(8);
  kda_safe_gate(f.data(), 2, 2, 2, a_log.data(), dt.data(), -5.0f, g.data());
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(g[i], -2.5f);
  EXPECT_FLOAT_EQ(g[4], -5.0f);  // saturated: g -> lower bound
  EXPECT_NEAR(g[5], 0.0f, 1e-30f);
  EXPECT_NEAR(g[6], -5.0 * sig(0.5 * 1.0), 1e-6);
  EXPECT_NEAR(g[7], -5.0 * sig(0.5 * 2.0), 1e-6);
  for (float v : g) EXPECT_TRUE(v <= 0.0f && v >= -5.0f);
}

TEST(KdaGates, DecayGateDispatchesOnLowerBound) {
  std::mt19937 rng(3);
  const int H = 3, K = 4, T = 5;
  const auto f = randn(rng, T * H * K, 3.0f), dt = randn(rng, H * K), a = randn(rng, H);
  std::vector<float> safe(f.size()), soft(f.size()), got(f.size());
  kda_safe_gate(f.data(), T, H, K, a.data(), dt.data(), -5.0f, safe.data());
  kda_softplus_gate(f.data(), T, H, K, a.data(), dt.data(), soft.data());
  kda_decay_gate(-5.0f, f.data(), T, H, K, a.data(), dt.data(), got.data());
  EXPECT_EQ(got, safe);
  kda_decay_gate(std::nullopt, f.data(), T, H, K, a.data(), dt.data(), got.data());
  EXPECT_EQ(got, soft);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < H * K; ++c) {
      const double z = double(f[t * H * K + c]) + dt[c], A = std::exp(double(a[c / K]));
      const double sp = z > 20 ? z : std::log1p(std::exp(z));
      EXPECT_NEAR(soft[t * H * K + c], -A * sp, 1e-5 * (1 + A * sp));
      EXPECT_NEAR(safe[t * H * K + c], -5.0 * sig(A * z), 1e-6);
    }
  EXPECT_THROW(kda_decay_gate(0.5f, f.data(), T, H, K, a.data(), dt.data(), got.data()), Error);
}

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
  linear_ref(x.data(), T, full.g_proj, want.data());
  for (int i = 0; i < T * P; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])));
  KdaOutputGate lr;
  lr.g_a = {wa.data(), DType::F32, R, D};
  lr.g_b = {wb.data(), DType::F32, P, R};
  lr.validate(D, P);
  lr.logits(x.data(), T, got.data());
  linear_ref(x.data(), T, lr.g_a, low.data());
  linear_ref(low.data(), T, lr.g_b, want.data());
  for (int i = 0; i < T * P; ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])));
  EXPECT_THROW(full.validate(D, P + 1), Error);
  KdaOutputGate both = lr;
  both.g_proj = full.g_proj;
  EXPECT_THROW(both.validate(D, P), Error);
}
