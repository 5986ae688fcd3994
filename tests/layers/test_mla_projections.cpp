// MLA projections: the q-LoRA query against a double-precision reference, the sigmoid output gate,
// a bad q_a_layernorm shape.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"
#include "layers/mla_projections.h"
#include "random_weights.h"

using namespace ds;
using ds::testing::randn;
using ds::testing::sig;

TEST(MlaProjections, MlaQueryLoraAndOutputGate) {
  std::mt19937 rng(12);
  const int D = 16, R = 6, Q = 10, T = 2;
  const auto x = randn(rng, T * D), wa = randn(rng, R * D), wb = randn(rng, Q * R), nw = randn(rng, R);
  MlaQueryProj qp;
  qp.q_a = {wa.data(), DType::F32, R, D};
  qp.q_b = {wb.data(), DType::F32, Q, R};
  qp.q_a_norm = nw;
  qp.validate(D, Q);
  std::vector<float> got(T * Q);
  qp.forward(x.data(), T, got.data());
  for (int t = 0; t < T; ++t) {
    std::vector<double> a(R);
    double ss = 0;
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < D; ++c) a[r] += double(wa[r * D + c]) * x[t * D + c];
      ss += a[r] * a[r];
    }
    const double inv = 1.0 / std::sqrt(ss / R + 1e-6);  // q_a_layernorm eps 1e-6
    for (int o = 0; o < Q; ++o) {
      double acc = 0;
      for (int r = 0; r < R; ++r) acc += double(wb[o * R + r]) * a[r] * inv * nw[r];
      EXPECT_NEAR(got[t * Q + o], acc, 1e-5 * (1 + std::fabs(acc)));
    }
  }
  // Output gate: attn ⊙ sigmoid(g_proj x).
  const int HV = 8;
  const auto wg = randn(rng, HV * D);
  auto attn = randn(rng, T * HV);
  const auto before = attn;
  const WeightView g{wg.data(), DType::F32, HV, D};
  mla_output_gate(g, x.data(), T, attn.data());
  std::vector<float> logit(T * HV);
  cpu::linear_ref(x.data(), T, g, logit.data());
  for (int i = 0; i < T * HV; ++i)
    EXPECT_NEAR(attn[i], before[i] * sig(logit[i]), 1e-6 * (1 + std::fabs(before[i])));
  MlaQueryProj bad = qp;
  bad.q_a_norm.pop_back();
  EXPECT_THROW(bad.validate(D, Q), Error);
}
