// KDA decay gates (kernels/cpu/kda_gate.h): the bounded K3 gate and Kimi Linear's softplus gate.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/kda_gate.h"
#include "kernels/kda.h"

using namespace ds;

namespace {
double sig(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
std::vector<float> randn(std::mt19937& rng, size_t n, float stddev = 1.0f) {
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}
}  // namespace

TEST(KdaGate, SafeGateValues) {
  // H = 2, K = 2: exp(A_log) = 2 and 0.5.
  const std::vector<float> a_log{std::log(2.0f), std::log(0.5f)}, dt{0.5f, -1.0f, 0.0f, 3.0f};
  const std::vector<float> f{-0.5f,  1.0f,    0.0f, -3.0f,  // z = 0 everywhere: g = lb/2
                             100.0f, -100.0f, 1.0f, -1.0f};
  std::vector<float> g(8);
  cpu::kda_safe_gate(f.data(), 2, 2, 2, a_log.data(), dt.data(), -5.0f, g.data());
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(g[i], -2.5f);
  EXPECT_FLOAT_EQ(g[4], -5.0f);  // saturated: g -> lower bound
  EXPECT_NEAR(g[5], 0.0f, 1e-30f);
  EXPECT_NEAR(g[6], -5.0 * sig(0.5 * 1.0), 1e-6);
  EXPECT_NEAR(g[7], -5.0 * sig(0.5 * 2.0), 1e-6);
  for (float v : g) EXPECT_TRUE(v <= 0.0f && v >= -5.0f);
}

TEST(KdaGate, DecayGateDispatchesOnLowerBound) {
  std::mt19937 rng(3);
  const int H = 3, K = 4, T = 5;
  const auto f = randn(rng, T * H * K, 3.0f), dt = randn(rng, H * K), a = randn(rng, H);
  std::vector<float> safe(f.size()), soft(f.size()), got(f.size());
  cpu::kda_safe_gate(f.data(), T, H, K, a.data(), dt.data(), -5.0f, safe.data());
  cpu::kda_softplus_gate(f.data(), T, H, K, a.data(), dt.data(), soft.data());
  cpu::kda_decay_gate(-5.0f, f.data(), T, H, K, a.data(), dt.data(), got.data());
  EXPECT_EQ(got, safe);
  cpu::kda_decay_gate(std::nullopt, f.data(), T, H, K, a.data(), dt.data(), got.data());
  EXPECT_EQ(got, soft);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < H * K; ++c) {
      const double z = double(f[t * H * K + c]) + dt[c], A = std::exp(double(a[c / K]));
      const double sp = z > 20 ? z : std::log1p(std::exp(z));
      EXPECT_NEAR(soft[t * H * K + c], -A * sp, 1e-5 * (1 + A * sp));
      EXPECT_NEAR(safe[t * H * K + c], -5.0 * sig(A * z), 1e-6);
    }
  EXPECT_THROW(cpu::kda_decay_gate(0.5f, f.data(), T, H, K, a.data(), dt.data(), got.data()), Error);
}

TEST(KdaGate, InterfaceChecksShapesAndBound) {
  const std::vector<float> a_log{0.0f}, dt(4, 0.0f), f(8, 1.0f);
  std::vector<float> g(8);
  const KdaGate soft{std::nullopt, f32_vec(a_log.data(), 1), f32_vec(dt.data(), 4)};
  kda_decay_gate(f32_rows(f.data(), 2, 4), soft, 1, 4, f32_rows(g.data(), 2, 4));
  EXPECT_NEAR(g[0], -std::log1p(std::exp(1.0)), 1e-6);
  const KdaGate bad{0.5f, soft.a_log, soft.dt_bias};
  EXPECT_THROW(kda_decay_gate(f32_rows(f.data(), 2, 4), bad, 1, 4, f32_rows(g.data(), 2, 4)), Error);
  EXPECT_THROW(kda_decay_gate(f32_rows(f.data(), 2, 4), soft, 2, 2, f32_rows(g.data(), 2, 4)), Error);
}
