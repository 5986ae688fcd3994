// MoeLayer with K3's latent projections: routing, the forward against a naive double-precision
// Stable LatentMoE, MXFP4 experts against their dense expansion, bad shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/check.h"
#include "layers/moe_layer.h"
#include "random_weights.h"

using namespace ds;
using ds::testing::randn;
using ds::testing::sig;

namespace {

// y[o] = Σ_c W[o, c] x[c] in double.
std::vector<double> matvec(const std::vector<float>& w, int rows, int cols, const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[r] += double(w[size_t(r) * cols + c]) * x[c];
  return y;
}

struct DenseGlu {
  std::vector<float> w1, w3, w2;  // [I, In], [I, In], [In, I]
  int in, inter;
  GluMlp view() const {
    GluMlp e;
    e.act = Activation::Situ;
    e.gate.dense = {w1.data(), DType::F32, inter, in};
    e.up.dense = {w3.data(), DType::F32, inter, in};
    e.down.dense = {w2.data(), DType::F32, in, inter};
    return e;
  }
  std::vector<double> ref(const std::vector<double>& x) const {  // SiTU β 4 / 25
    auto a = matvec(w1, inter, in, x), b = matvec(w3, inter, in, x);
    for (int i = 0; i < inter; ++i)
      a[i] = 4.0 * std::tanh(a[i] / 4.0) * sig(a[i]) * 25.0 * std::tanh(b[i] / 25.0);
    return matvec(w2, in, inter, a);
  }
};

DenseGlu random_glu(std::mt19937& rng, int in, int inter) {
  return {randn(rng, size_t(inter) * in, 2.0f / std::sqrt(float(in))),
          randn(rng, size_t(inter) * in, 2.0f / std::sqrt(float(in))),
          randn(rng, size_t(in) * inter, 1.0f / std::sqrt(float(inter))), in, inter};
}

}  // namespace

TEST(K3LatentMoe, RouterUsesBiasForSelectionOnly) {
  MoeConfig cfg;
  cfg.n_expert = 4, cfg.n_expert_per_token = 2, cfg.routed_scaling = 2.0f;
  std::vector<float> router(4 * 8, 0.0f), w1(8), w3(8), w2(8);
  MoeParams p;
  p.router = {router.data(), DType::F32, 4, 8};
  p.correction_bias = {0.0f, 0.0f, 2.0f, 0.0f};
  for (int e = 0; e < 4; ++e) {
    GluMlp x;
    x.act = Activation::Situ;
    x.gate.dense = {w1.data(), DType::F32, 1, 8};
    x.up.dense = {w3.data(), DType::F32, 1, 8};
    x.down.dense = {w2.data(), DType::F32, 8, 1};
    p.experts.push_back(x);
  }
  MoeLayer moe(cfg, 1e-5f, p);
  const float logits[4] = {0.0f, 1.0f, -1.0f, 2.0f};
  const MoeRouting r = moe.route(logits, 1);
  ASSERT_EQ(r.expert, (std::vector<int32_t>{2, 3}));  // expert 2 selected through its bias
  const double s2 = sig(-1.0), s3 = sig(2.0);
  EXPECT_NEAR(r.weight[0], 2.0 * s2 / (s2 + s3), 1e-6);  // unbiased score, renormalised, × 2
  EXPECT_NEAR(r.weight[1], 2.0 * s3 / (s2 + s3), 1e-6);
}

TEST(K3LatentMoe, ForwardMatchesNaiveStableLatentMoe) {
  std::mt19937 rng(77);
  const int D = 24, L = 16, I = 8, E = 6, K = 3, IS = 10, T = 7;
  MoeConfig cfg;
  cfg.n_expert = E, cfg.n_expert_per_token = K, cfg.routed_scaling = 1.0f, cfg.latent_dim = L;
  cfg.latent_norm = true;
  const auto router = randn(rng, size_t(E) * D, 1.0f), bias = randn(rng, E, 0.1f);
  const auto down = randn(rng, size_t(L) * D, 1.0f / std::sqrt(float(D)));
  const auto up = randn(rng, size_t(D) * L, 1.0f / std::sqrt(float(L)));
  auto norm = randn(rng, L, 0.1f);
  for (float& v : norm) v += 1.0f;
  std::vector<DenseGlu> experts;
  for (int e = 0; e < E; ++e) experts.push_back(random_glu(rng, L, I));
  const DenseGlu shared = random_glu(rng, D, IS);
  MoeParams p;
  p.router = {router.data(), DType::F32, E, D};
  p.correction_bias = bias;
  p.latent_down = {down.data(), DType::F32, L, D};
  p.latent_up = {up.data(), DType::F32, D, L};
  p.latent_norm = norm;
  for (const auto& e : experts) p.experts.push_back(e.view());
  p.shared = shared.view();
  const MoeLayer moe(cfg, 1e-5f, p);
  const auto x = randn(rng, size_t(T) * D, 1.0f);
  std::vector<float> y(size_t(T) * D);
  moe.forward(x.data(), T, y.data());

  for (int t = 0; t < T; ++t) {
    std::vector<double> xt(x.begin() + t * D, x.begin() + (t + 1) * D);
    const auto logit = matvec(router, E, D, xt);
    std::vector<double> s(E), sel(E);
    for (int e = 0; e < E; ++e) s[e] = sig(logit[e]), sel[e] = s[e] + bias[e];
    std::vector<int> idx(E);
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return sel[a] > sel[b]; });
    double sum = 0;
    for (int j = 0; j < K; ++j) sum += s[idx[j]];
    const auto z = matvec(down, L, D, xt);
    std::vector<double> u(L, 0.0);
    for (int j = 0; j < K; ++j) {
      const auto o = experts[idx[j]].ref(z);
      for (int c = 0; c < L; ++c) u[c] += s[idx[j]] / (sum + 1e-20) * o[c];
    }
    double ss = 0;
    for (double v : u) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / L + 1e-5);
    for (int c = 0; c < L; ++c) u[c] *= inv * norm[c];
    auto want = matvec(up, D, L, u);
    const auto sh = shared.ref(xt);
    for (int c = 0; c < D; ++c) {
      want[c] += sh[c];
      EXPECT_NEAR(y[size_t(t) * D + c], want[c], 2e-5 * (1.0 + std::fabs(want[c]))) << t << " " << c;
    }
  }
}

TEST(K3LatentMoe, Mxfp4ExpertsEqualTheirDenseExpansion) {
  std::mt19937 rng(8);
  const int D = 32, L = 64, I = 32, E = 4, K = 2, T = 5;
  MoeConfig cfg;
  cfg.n_expert = E, cfg.n_expert_per_token = K, cfg.latent_dim = L, cfg.latent_norm = true;
  const auto router = randn(rng, size_t(E) * D, 1.0f);
  const auto down = randn(rng, size_t(L) * D, 0.2f), up = randn(rng, size_t(D) * L, 0.1f);
  const std::vector<float> norm(L, 1.0f);
  // Per expert three MXFP4 matrices (w1, w3 [I, L]; w2 [L, I]) and their f32 expansions.
  std::uniform_int_distribution<int> byte(0, 255), sc(122, 126);
  struct Q {
    std::vector<uint8_t> packed, scale;
    std::vector<float> dense;
    int rows, cols;
  };
  std::vector<Q> mats;
  for (int e = 0; e < E; ++e)
    for (int m = 0; m < 3; ++m) {
      Q q;
      q.rows = m == 2 ? L : I, q.cols = m == 2 ? I : L;
      q.packed.resize(size_t(q.rows) * q.cols / 2), q.scale.resize(size_t(q.rows) * q.cols / 32);
      for (auto& b : q.packed) b = uint8_t(byte(rng));
      for (auto& s : q.scale) s = uint8_t(sc(rng));
      q.dense.resize(size_t(q.rows) * q.cols);
      for (int r = 0; r < q.rows; ++r)
        for (int c = 0; c < q.cols; ++c) {
          const uint8_t b = q.packed[size_t(r) * q.cols / 2 + c / 2], nib = c % 2 ? b >> 4 : b & 0xf;
          const float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
          q.dense[size_t(r) * q.cols + c] = (nib & 8 ? -1.0f : 1.0f) * mag[nib & 7] *
                                            std::ldexp(1.0f, q.scale[size_t(r) * q.cols / 32 + c / 32] - 127);
        }
      mats.push_back(std::move(q));
    }
  MoeParams pq, pd;
  for (MoeParams* p : {&pq, &pd}) {
    p->router = {router.data(), DType::F32, E, D};
    p->latent_down = {down.data(), DType::F32, L, D};
    p->latent_up = {up.data(), DType::F32, D, L};
    p->latent_norm = norm;
  }
  for (int e = 0; e < E; ++e) {
    GluMlp q, d;
    q.act = d.act = Activation::Situ;
    ExpertLinear* qs[3] = {&q.gate, &q.up, &q.down};
    ExpertLinear* ds_[3] = {&d.gate, &d.up, &d.down};
    for (int m = 0; m < 3; ++m) {
      const Q& src = mats[size_t(e * 3 + m)];
      qs[m]->mxfp4 = {src.packed.data(), src.scale.data(), src.rows, src.cols};
      ds_[m]->dense = {src.dense.data(), DType::F32, src.rows, src.cols};
    }
    pq.experts.push_back(q);
    pd.experts.push_back(d);
  }
  const MoeLayer mq(cfg, 1e-5f, pq), md(cfg, 1e-5f, pd);
  const auto x = randn(rng, size_t(T) * D, 1.0f);
  std::vector<float> yq(size_t(T) * D), yd(size_t(T) * D);
  mq.forward(x.data(), T, yq.data());
  md.forward(x.data(), T, yd.data());
  for (size_t i = 0; i < yq.size(); ++i) EXPECT_NEAR(yq[i], yd[i], 1e-5f * (1 + std::fabs(yd[i])));
}

TEST(K3LatentMoe, BadShapesThrow) {
  MoeConfig cfg;
  cfg.n_expert = 2, cfg.n_expert_per_token = 1, cfg.latent_dim = 4, cfg.latent_norm = true;
  std::vector<float> r(2 * 8), dn(4 * 8), upw(8 * 4), w(4 * 4);
  MoeParams p;
  p.router = {r.data(), DType::F32, 2, 8};
  p.latent_down = {dn.data(), DType::F32, 4, 8};
  p.latent_up = {upw.data(), DType::F32, 8, 4};
  GluMlp e;
  e.gate.dense = e.up.dense = e.down.dense = {w.data(), DType::F32, 4, 4};
  p.experts = {e, e};
  EXPECT_THROW(MoeLayer(cfg, 1e-5f, p), Error);  // latent_moe_use_norm without the weight
  p.latent_norm.assign(4, 1.0f);
  EXPECT_NO_THROW(MoeLayer(cfg, 1e-5f, p));
  p.experts.pop_back();
  EXPECT_THROW(MoeLayer(cfg, 1e-5f, p), Error);  // expert count
  p.experts = {e, e};
  p.latent_up = {upw.data(), DType::F32, 4, 8};
  EXPECT_THROW(MoeLayer(cfg, 1e-5f, p), Error);  // up_proj transposed
}
