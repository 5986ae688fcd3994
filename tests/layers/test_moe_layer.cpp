// MoeLayer: router semantics (biased selection, unbiased renormalised weights, scaling) with exact
// values, and the full layer against a per-token double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "layers/moe_layer.h"
#include "random_weights.h"

namespace ds {
namespace {

using testing::RandomWeights;
using testing::sig;

constexpr float kEps = 1e-5f;  // latent RMSNorm eps (unused: no latent projections)

MoeConfig small_moe(int E, int k) {
  MoeConfig c;
  c.n_expert = E;
  c.n_expert_per_token = k;
  c.n_shared_expert = 1;
  c.expert_intermediate = 6;
  c.routed_scaling = 2.446f;
  return c;
}

MoeParams random_params(RandomWeights& rw, int E, int64_t D, int64_t I, std::vector<float> bias) {
  MoeParams p;
  p.router = rw.f32(E, D);
  p.correction_bias = std::move(bias);
  for (int e = 0; e < E; ++e)
    p.experts.push_back(GluMlp{rw.bf16(I, D), rw.bf16(I, D), rw.bf16(D, I), Activation::Silu, {}});
  p.shared = GluMlp{rw.bf16(I, D), rw.bf16(I, D), rw.bf16(D, I), Activation::Silu, {}};
  return p;
}

TEST(MoeLayer, BiasSelectsButWeightsComeFromUnbiasedScores) {
  RandomWeights rw(1);
  const MoeLayer moe(small_moe(4, 2), kEps, random_params(rw, 4, 8, 6, {0.0f, 0.5f, 0.0f, 0.0f}));
  // Unbiased order would be experts 0, 2; the +0.5 bias lifts expert 1 above expert 2.
  const float logits[4] = {2.0f, -1.0f, 1.0f, -3.0f};
  const MoeRouting r = moe.route(logits, 1);
  ASSERT_EQ(r.k, 2);
  EXPECT_EQ(r.expert[0], 0);
  EXPECT_EQ(r.expert[1], 1);  // sigmoid(-1) + 0.5 = 0.769 > sigmoid(1) = 0.731
  const double s0 = sig(2.0), s1 = sig(-1.0);
  EXPECT_NEAR(r.weight[0], s0 / (s0 + s1) * 2.446, 1e-6);
  EXPECT_NEAR(r.weight[1], s1 / (s0 + s1) * 2.446, 1e-6);
}

TEST(MoeLayer, TiesGoToTheLowerExpertId) {
  RandomWeights rw(2);
  const MoeLayer moe(small_moe(4, 1), kEps, random_params(rw, 4, 8, 6, {}));
  const float logits[4] = {0.0f, 1.0f, 1.0f, 0.5f};
  const MoeRouting r = moe.route(logits, 1);
  EXPECT_EQ(r.expert[0], 1);
  EXPECT_NEAR(r.weight[0], sig(1.0) * 2.446, 1e-6);  // top-1: no renormalisation
}

TEST(MoeLayer, ForwardMatchesPerTokenReference) {
  RandomWeights rw(3);
  const int E = 6, k = 2;
  const int64_t D = 16, I = 12, T = 9;
  MoeParams p = random_params(rw, E, D, I, rw.vec(E, 0.3f));
  const MoeParams copy = p;
  const MoeLayer moe(small_moe(E, k), kEps, std::move(p));
  const std::vector<float> x = rw.vec(T * D, 1.0f);
  std::vector<float> y(size_t(T * D));
  moe.forward(x.data(), T, y.data());

  auto mlp = [&](const GluMlp& m, const std::vector<double>& xt) {
    const std::vector<double> g = testing::ref_linear(xt, 1, m.gate.dense),
                              u = testing::ref_linear(xt, 1, m.up.dense);
    std::vector<double> h(static_cast<size_t>(I));
    for (int64_t i = 0; i < I; ++i) h[size_t(i)] = g[size_t(i)] * sig(g[size_t(i)]) * u[size_t(i)];
    return testing::ref_linear(h, 1, m.down.dense);
  };
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> xt(x.begin() + t * D, x.begin() + (t + 1) * D);
    const std::vector<double> logit = testing::ref_linear(xt, 1, copy.router);
    std::vector<int> order(E);
    for (int e = 0; e < E; ++e) order[size_t(e)] = e;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return sig(logit[size_t(a)]) + copy.correction_bias[size_t(a)] >
             sig(logit[size_t(b)]) + copy.correction_bias[size_t(b)];
    });
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += sig(logit[size_t(order[size_t(j)])]);
    std::vector<double> ref = mlp(*copy.shared, xt);
    for (int j = 0; j < k; ++j) {
      const int e = order[size_t(j)];
      const double w = sig(logit[size_t(e)]) / sum * 2.446;
      const std::vector<double> ye = mlp(copy.experts[size_t(e)], xt);
      for (int64_t d = 0; d < D; ++d) ref[size_t(d)] += w * ye[size_t(d)];
    }
    for (int64_t d = 0; d < D; ++d) EXPECT_NEAR(y[size_t(t * D + d)], ref[size_t(d)], 1e-5) << t << "," << d;
  }
}

TEST(MoeLayer, RejectsInconsistentShapes) {
  RandomWeights rw(4);
  MoeParams p = random_params(rw, 4, 8, 6, {});
  p.experts.pop_back();
  EXPECT_THROW(MoeLayer(small_moe(4, 2), kEps, p), Error);
  MoeParams q = random_params(rw, 4, 8, 6, {0.f, 0.f});
  EXPECT_THROW(MoeLayer(small_moe(4, 2), kEps, q), Error);
  EXPECT_THROW(MoeLayer(small_moe(4, 5), kEps, random_params(rw, 4, 8, 6, {})), Error);
}

}  // namespace
}  // namespace ds
