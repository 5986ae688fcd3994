// MlaLayer: the expanded (prefill) and absorbed (decode) attention forms against a double-precision
// reference of the HF prefill math, prefill in pieces == one shot, token-by-token decode == prefill,
// the cached latent layout [RMSNorm(c~) ; k_pe], and the q-LoRA path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "layers/mla_layer.h"
#include "random_weights.h"

namespace ds {
namespace {

using testing::RandomWeights;

MlaConfig small_mla(int q_lora) {
  MlaConfig c;
  c.n_head = 3;
  c.q_lora_rank = q_lora;
  c.kv_lora_rank = 16;
  c.qk_nope_head_dim = 8;
  c.qk_rope_head_dim = 4;
  c.v_head_dim = 6;
  return c;
}

constexpr int64_t kD = 24;

MlaParams random_params(RandomWeights& rw, const MlaConfig& c) {
  MlaParams p;
  const int64_t H = c.n_head;
  if (c.q_lora_rank == 0) {
    p.q_proj = rw.bf16(H * c.qk_head_dim(), kD);
  } else {
    p.q_a = rw.bf16(c.q_lora_rank, kD);
    p.q_b = rw.bf16(H * c.qk_head_dim(), c.q_lora_rank);
    p.q_a_norm = rw.vec(c.q_lora_rank, 0.1f, 1.0f);
  }
  p.kv_a = rw.bf16(c.latent_dim(), kD);
  p.kv_a_norm = rw.vec(c.kv_lora_rank, 0.1f, 1.0f);
  p.kv_b = rw.bf16(H * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank);
  p.o_proj = rw.bf16(kD, H * c.v_head_dim);
  return p;
}

std::vector<double> rms(std::vector<double> x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= inv * w[i];
  return x;
}

// Causal MLA over the whole sequence x [T, D] in double (HF prefill math), y [T, D].
std::vector<double> reference(const MlaConfig& c, const MlaParams& p, const std::vector<float>& xf,
                              int64_t T) {
  const int64_t H = c.n_head, dn = c.qk_nope_head_dim, dr = c.qk_rope_head_dim, dv = c.v_head_dim;
  const int64_t dq = dn + dr, R = c.kv_lora_rank;
  const std::vector<double> x(xf.begin(), xf.end());
  std::vector<double> q;
  if (c.q_lora_rank == 0) {
    q = testing::ref_linear(x, T, p.q_proj);
  } else {
    const std::vector<double> qa = testing::ref_linear(x, T, p.q_a);
    std::vector<double> qn;
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> row =
          rms({qa.begin() + t * c.q_lora_rank, qa.begin() + (t + 1) * c.q_lora_rank}, p.q_a_norm, 1e-6);
      qn.insert(qn.end(), row.begin(), row.end());
    }
    q = testing::ref_linear(qn, T, p.q_b);
  }
  const std::vector<double> kv = testing::ref_linear(x, T, p.kv_a);
  std::vector<double> cn;
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> row =
        rms({kv.begin() + t * c.latent_dim(), kv.begin() + t * c.latent_dim() + R}, p.kv_a_norm, 1e-6);
    cn.insert(cn.end(), row.begin(), row.end());
  }
  const std::vector<double> kvb = testing::ref_linear(cn, T, p.kv_b);  // [T, H*(dn+dv)]
  std::vector<double> o(size_t(T * H * dv), 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 0; s < T; ++s) {
      std::vector<double> sc(size_t(s + 1));
      double m = -1e300, sum = 0;
      for (int64_t t = 0; t <= s; ++t) {
        double d = 0;
        for (int64_t j = 0; j < dn; ++j)
          d += q[size_t((s * H + h) * dq + j)] * kvb[size_t((t * H + h) * (dn + dv) + j)];
        for (int64_t j = 0; j < dr; ++j)
          d += q[size_t((s * H + h) * dq + dn + j)] * kv[size_t(t * c.latent_dim() + R + j)];
        sc[size_t(t)] = d / std::sqrt(double(dq));
        m = std::max(m, sc[size_t(t)]);
      }
      for (double& v : sc) sum += (v = std::exp(v - m));
      for (int64_t t = 0; t <= s; ++t)
        for (int64_t j = 0; j < dv; ++j)
          o[size_t((s * H + h) * dv + j)] +=
              sc[size_t(t)] / sum * kvb[size_t((t * H + h) * (dn + dv) + dn + j)];
    }
  return testing::ref_linear(o, T, p.o_proj);
}

void expect_near(const std::vector<float>& a, const std::vector<double>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

// Runs pieces of x through one sequence's latent store, returns the concatenated outputs.
std::vector<float> run_pieces(const MlaLayer& L, const std::vector<float>& x, std::vector<int64_t> pieces,
                              MlaAttnMode mode, MlaLatentStore* store) {
  std::vector<float> y(x.size());
  int64_t off = 0;
  for (int64_t n : pieces) {
    LayerBatch b;
    b.add(n);
    const MlaLatentPages c[1] = {store->pages(n)};
    L.forward(b, c, x.data() + off * kD, y.data() + off * kD, mode);
    store->n_tokens += n;
    off += n;
  }
  return y;
}

// The same through a paged pool: pages of 4 rows at scattered ids (not adjacent in memory).
std::vector<float> run_pieces_paged(const MlaLayer& L, const std::vector<float>& x,
                                    std::vector<int64_t> pieces, MlaAttnMode mode, int latent_dim) {
  constexpr int64_t kP = 4;
  const std::vector<int32_t> page_ids = {7, 2, 9, 0, 5, 3, 8, 1, 6, 4};
  std::vector<float> pool(page_ids.size() * kP * size_t(latent_dim), -1.0f);
  std::vector<float> y(x.size());
  int64_t off = 0;
  for (int64_t n : pieces) {
    LayerBatch b;
    b.add(n);
    const MlaLatentPages c[1] = {{pool.data(), page_ids, kP, latent_dim, off}};
    L.forward(b, c, x.data() + off * kD, y.data() + off * kD, mode);
    off += n;
  }
  return y;
}

class MlaForms : public ::testing::TestWithParam<int> {};  // param: q_lora_rank

TEST_P(MlaForms, ExpandedAndAbsorbedMatchReference) {
  RandomWeights rw(11);
  const MlaConfig cfg = small_mla(GetParam());
  const MlaParams p = random_params(rw, cfg);
  const MlaLayer layer(cfg, kD, p);
  const int64_t T = 13;
  const std::vector<float> x = rw.vec(T * kD, 1.0f);
  const std::vector<double> ref = reference(cfg, p, x, T);
  for (MlaAttnMode mode : {MlaAttnMode::Expanded, MlaAttnMode::Absorbed}) {
    MlaLatentStore c;
    c.init(cfg.latent_dim());
    const std::vector<float> one = run_pieces(layer, x, {T}, mode, &c);
    expect_near(one, ref, 2e-5, "one shot");
    EXPECT_EQ(c.n_tokens, T);
    MlaLatentStore c2;
    c2.init(cfg.latent_dim());
    expect_near(run_pieces(layer, x, {5, 1, 7}, mode, &c2), ref, 2e-5, "pieces");
    EXPECT_EQ(c2.latent, c.latent);
    // Through scattered pages: the same numbers as the contiguous store.
    EXPECT_EQ(run_pieces_paged(layer, x, {5, 1, 7}, mode, int(cfg.latent_dim())),
              run_pieces(layer, x, {5, 1, 7}, mode, &(c2 = MlaLatentStore{int(cfg.latent_dim()), 0, {}})));
  }
  MlaLatentStore c3;  // Auto: prefill expanded, then absorbed one token at a time
  c3.init(cfg.latent_dim());
  expect_near(run_pieces(layer, x, {4, 1, 1, 1, 1, 1, 1, 1, 1, 1}, MlaAttnMode::Auto, &c3), ref, 2e-5,
              "decode");
}

INSTANTIATE_TEST_SUITE_P(QLora, MlaForms, ::testing::Values(0, 10));

// 300 query rows: the GEMM path of linear() and more than one 256-row score block.
TEST(MlaLayer, LongPrefillMatchesReference) {
  RandomWeights rw(15);
  const MlaConfig cfg = small_mla(0);
  const MlaParams p = random_params(rw, cfg);
  const MlaLayer layer(cfg, kD, p);
  const int64_t T = 300;
  const std::vector<float> x = rw.vec(T * kD, 1.0f);
  const std::vector<double> ref = reference(cfg, p, x, T);
  MlaLatentStore c;
  c.init(cfg.latent_dim());
  expect_near(run_pieces(layer, x, {T}, MlaAttnMode::Expanded, &c), ref, 2e-5, "one shot");
  MlaLatentStore c2;
  c2.init(cfg.latent_dim());
  expect_near(run_pieces(layer, x, {270, 30}, MlaAttnMode::Expanded, &c2), ref, 2e-5, "two pieces");
}

TEST(MlaLayer, LatentsHoldNormedLatentThenKpe) {
  RandomWeights rw(12);
  const MlaConfig cfg = small_mla(0);
  const MlaParams p = random_params(rw, cfg);
  const MlaLayer layer(cfg, kD, p);
  const std::vector<float> x = rw.vec(2 * kD, 1.0f);
  MlaLatentStore c;
  c.init(cfg.latent_dim());
  run_pieces(layer, x, {2}, MlaAttnMode::Auto, &c);
  const std::vector<double> kv = testing::ref_linear(std::vector<double>(x.begin(), x.end()), 2, p.kv_a);
  for (int64_t t = 0; t < 2; ++t) {
    const int64_t L = cfg.latent_dim(), R = cfg.kv_lora_rank;
    const std::vector<double> cn = rms({kv.begin() + t * L, kv.begin() + t * L + R}, p.kv_a_norm, 1e-6);
    for (int64_t j = 0; j < R; ++j) EXPECT_NEAR(c.row(t)[j], cn[size_t(j)], 1e-5);
    for (int64_t j = R; j < L; ++j) EXPECT_NEAR(c.row(t)[j], kv[size_t(t * L + j)], 1e-5);
  }
}

TEST(MlaLayer, BatchOfDifferentLengthsEqualsSeparateRuns) {
  RandomWeights rw(13);
  const MlaConfig cfg = small_mla(0);
  const MlaLayer layer(cfg, kD, random_params(rw, cfg));
  const std::vector<float> xa = rw.vec(6 * kD, 1.0f), xb = rw.vec(2 * kD, 1.0f);
  MlaLatentStore a, b, a1, b1;
  for (MlaLatentStore* c : {&a, &b, &a1, &b1}) c->init(cfg.latent_dim());
  const std::vector<float> ya = run_pieces(layer, xa, {6}, MlaAttnMode::Auto, &a1);
  const std::vector<float> yb = run_pieces(layer, xb, {2}, MlaAttnMode::Auto, &b1);
  std::vector<float> x(xa), y(8 * kD);
  x.insert(x.end(), xb.begin(), xb.end());
  LayerBatch lb;
  lb.add(6);
  lb.add(2);
  const MlaLatentPages latents[2] = {a.pages(6), b.pages(2)};
  layer.forward(lb, latents, x.data(), y.data());
  for (int64_t i = 0; i < 6 * kD; ++i) EXPECT_NEAR(y[size_t(i)], ya[size_t(i)], 1e-6);
  for (int64_t i = 0; i < 2 * kD; ++i) EXPECT_NEAR(y[size_t(6 * kD + i)], yb[size_t(i)], 1e-6);
}

TEST(MlaLayer, RejectsMisShapedWeights) {
  RandomWeights rw(14);
  const MlaConfig cfg = small_mla(0);
  MlaParams p = random_params(rw, cfg);
  p.kv_b = rw.bf16(5, cfg.kv_lora_rank);
  EXPECT_THROW(MlaLayer(cfg, kD, p), Error);
}

}  // namespace
}  // namespace ds
