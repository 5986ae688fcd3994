// Block AttnRes: folded queries, the mixer against a hand-computed softmax, the commit schedule,
// two-phase == reference on random inputs, out-of-order calls throw.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "layers/attn_res.h"
#include "random_weights.h"

using namespace ds;
using ds::testing::randn;

namespace {

AttnResQueries random_queries(std::mt19937& rng, int L, int D) {
  AttnResQueries q;
  q.n_layer = L, q.hidden = D;
  const float s = 1.0f / std::sqrt(float(D));
  q.attn = randn(rng, size_t(L) * D, 3.0f * s);  // large enough that the softmax is not uniform
  q.mlp = randn(rng, size_t(L) * D, 3.0f * s);
  q.out = randn(rng, size_t(D), 3.0f * s);
  return q;
}

// A deterministic stand-in sublayer: y = tanh(W·(x/rms(x))) · scale, W f32 [D, D].
struct FakeSublayer {
  std::vector<float> w;
  float scale;
  void apply(const float* x, int T, int D, float* y) const {
    for (int t = 0; t < T; ++t) {
      const float* xr = x + size_t(t) * D;
      double ss = 0;
      for (int c = 0; c < D; ++c) ss += double(xr[c]) * xr[c];
      const float inv = float(1.0 / std::sqrt(ss / D + 1e-6));
      for (int r = 0; r < D; ++r) {
        double acc = 0;
        for (int c = 0; c < D; ++c) acc += double(w[size_t(r) * D + c]) * xr[c] * inv;
        y[size_t(t) * D + r] = scale * float(std::tanh(acc));
      }
    }
  }
};

struct StreamRun {
  std::vector<std::vector<float>> inputs;    // every sublayer input h, in call order
  std::vector<std::vector<float>> partials;  // P after every layer
  std::vector<float> out;
};

StreamRun run_stream(const AttnResQueries& q, int S, AttnResMode mode, const std::vector<float>& emb, int T,
                     const std::vector<FakeSublayer>& attn, const std::vector<FakeSublayer>& mlp) {
  const int D = q.hidden;
  AttnResStream st(q, S, 1e-5f, mode);
  st.start(emb.data(), T);
  StreamRun run;
  std::vector<float> h(size_t(T) * D), y(size_t(T) * D);
  for (int l = 0; l < q.n_layer; ++l) {
    st.attn_input(l, h.data());
    run.inputs.push_back(h);
    attn[l].apply(h.data(), T, D, y.data());
    st.add_attn_output(l, y.data());
    st.mlp_input(l, h.data());
    run.inputs.push_back(h);
    mlp[l].apply(h.data(), T, D, y.data());
    st.add_mlp_output(l, y.data());
    run.partials.emplace_back(st.partial(), st.partial() + size_t(T) * D);
  }
  run.out.resize(size_t(T) * D);
  st.final_output(run.out.data());
  return run;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol, const char* what,
                  int i) {
  ASSERT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t k = 0; k < a.size(); ++k)
    worst = std::max(worst, std::fabs(a[k] - b[k]) / (1.0f + std::fabs(b[k])));
  EXPECT_LE(worst, tol) << what << " " << i;
}

}  // namespace

TEST(K3AttnRes, FoldQueryMultipliesNormAndProj) {
  const std::vector<float> g{1.0f, 2.0f, -0.5f}, w{0.25f, -1.0f, 4.0f};
  EXPECT_EQ(fold_attn_res_query(g, w), (std::vector<float>{0.25f, -2.0f, -2.0f}));
  EXPECT_THROW(fold_attn_res_query(g, std::vector<float>(2)), Error);
}

TEST(K3AttnRes, MixMatchesHandComputedSoftmax) {
  // Two sources, D = 2: V1 = [1, 1] (rms 1), V2 = [3, -3] (rms 3); query [0.5, 0].
  const float eps = 1e-5f;
  const std::vector<float> v1{1.0f, 1.0f}, v2{3.0f, -3.0f}, q{0.5f, 0.0f};
  const float* src[] = {v1.data(), v2.data()};
  std::vector<float> out(2);
  attn_res_mix(src, 1, 2, q.data(), eps, out.data());
  const double l1 = 0.5 / std::sqrt(1.0 + eps), l2 = 1.5 / std::sqrt(9.0 + eps);
  const double p1 = 1.0 / (1.0 + std::exp(l2 - l1)), p2 = 1.0 - p1;
  EXPECT_NEAR(out[0], p1 * 1.0 + p2 * 3.0, 1e-6);
  EXPECT_NEAR(out[1], p1 * 1.0 - p2 * 3.0, 1e-6);
  // One source: the mixture is the source itself, exactly.
  const float* one[] = {v2.data()};
  attn_res_mix(one, 1, 2, q.data(), eps, out.data());
  EXPECT_EQ(out, v2);
}

TEST(K3AttnRes, PartialSumScheduleCommitsEveryBlock) {
  // Sublayers that add constants make the stream's bookkeeping visible: with S = 2 the partial sum
  // restarts at layers 0 and 2 (commit), and accumulates within a block.
  const int L = 3, D = 2, T = 1, S = 2;
  AttnResQueries q;
  q.n_layer = L, q.hidden = D;
  q.attn.assign(L * D, 0.0f), q.mlp.assign(L * D, 0.0f), q.out.assign(D, 0.0f);
  AttnResStream st(q, S, 1e-5f, AttnResMode::Reference);
  const std::vector<float> emb{1.0f, 2.0f};
  st.start(emb.data(), T);
  std::vector<float> h(2);
  const float a[3][2] = {{10, 0}, {100, 0}, {1000, 0}}, m[3][2] = {{0, 20}, {0, 200}, {0, 2000}};
  st.attn_input(0, h.data());
  EXPECT_EQ(h, emb);  // layer 0 sees the embedding alone
  EXPECT_EQ(st.n_blocks(), 1);
  st.add_attn_output(0, a[0]);
  st.mlp_input(0, h.data());
  // Zero queries: uniform softmax over [embedding, P = a0].
  EXPECT_FLOAT_EQ(h[0], 0.5f * (1.0f + 10.0f));
  EXPECT_FLOAT_EQ(h[1], 0.5f * (2.0f + 0.0f));
  st.add_mlp_output(0, m[0]);
  EXPECT_EQ(std::vector<float>(st.partial(), st.partial() + 2), (std::vector<float>{10, 20}));
  st.attn_input(1, h.data());
  st.add_attn_output(1, a[1]);
  st.mlp_input(1, h.data());
  st.add_mlp_output(1, m[1]);
  EXPECT_EQ(std::vector<float>(st.partial(), st.partial() + 2), (std::vector<float>{110, 220}));
  EXPECT_EQ(st.n_blocks(), 1);
  st.attn_input(2, h.data());
  EXPECT_EQ(st.n_blocks(), 2);  // layer 2 commits the block of layers 0-1
  EXPECT_FLOAT_EQ(h[0], 0.5f * (1.0f + 110.0f));
  st.add_attn_output(2, a[2]);
  st.mlp_input(2, h.data());
  st.add_mlp_output(2, m[2]);
  EXPECT_EQ(std::vector<float>(st.partial(), st.partial() + 2), (std::vector<float>{1000, 2000}));
  st.final_output(h.data());
  EXPECT_FLOAT_EQ(h[0], (1.0f + 110.0f + 1000.0f) / 3.0f);
  EXPECT_FLOAT_EQ(h[1], (2.0f + 220.0f + 2000.0f) / 3.0f);
}

TEST(K3AttnRes, TwoPhaseEqualsReferenceOnRandomInputs) {
  std::mt19937 rng(1234);
  const int D = 48, T = 5;
  for (int L : {1, 4, 7}) {
    for (int S : {1, 2, 3, 12}) {
      const AttnResQueries q = random_queries(rng, L, D);
      std::vector<FakeSublayer> attn, mlp;
      for (int l = 0; l < L; ++l) {
        attn.push_back({randn(rng, size_t(D) * D, 1.0f / std::sqrt(float(D))), 2.0f});
        mlp.push_back({randn(rng, size_t(D) * D, 1.0f / std::sqrt(float(D))), 1.5f});
      }
      const std::vector<float> emb = randn(rng, size_t(T) * D);
      const StreamRun ref = run_stream(q, S, AttnResMode::Reference, emb, T, attn, mlp);
      const StreamRun two = run_stream(q, S, AttnResMode::TwoPhase, emb, T, attn, mlp);
      for (size_t i = 0; i < ref.inputs.size(); ++i)
        expect_close(two.inputs[i], ref.inputs[i], 1e-5f, "input", int(i));
      for (size_t i = 0; i < ref.partials.size(); ++i)
        expect_close(two.partials[i], ref.partials[i], 1e-5f, "partial", int(i));
      expect_close(two.out, ref.out, 1e-5f, "output", L * 100 + S);
    }
  }
}

TEST(K3AttnRes, PhaseOneMergeEqualsDirectMix) {
  std::mt19937 rng(99);
  const int D = 32, T = 4, NB = 5;
  std::vector<std::vector<float>> blocks;
  std::vector<const float*> bptr;
  for (int i = 0; i < NB; ++i) blocks.push_back(randn(rng, size_t(T) * D, float(i + 1)));
  for (auto& b : blocks) bptr.push_back(b.data());
  const std::vector<float> partial = randn(rng, size_t(T) * D, 4.0f);
  const std::vector<float> q0 = randn(rng, D), q1 = randn(rng, D);
  const float* qs[] = {q0.data(), q1.data()};
  AttnResBlockScores sc;
  sc.compute(bptr, T, D, qs, 1e-5f);
  std::vector<float> got(size_t(T) * D), want(size_t(T) * D);
  for (int j = 0; j < 2; ++j) {
    std::vector<const float*> src = bptr;
    src.push_back(partial.data());
    attn_res_mix(src, T, D, qs[j], 1e-5f, want.data());
    sc.merge(j, partial.data(), got.data());
    expect_close(got, want, 2e-6f, "with partial", j);
    attn_res_mix(bptr, T, D, qs[j], 1e-5f, want.data());
    sc.merge(j, nullptr, got.data());
    expect_close(got, want, 2e-6f, "blocks only", j);
  }
  EXPECT_THROW(sc.merge(2, nullptr, got.data()), Error);
}

TEST(K3AttnRes, OutOfOrderCallsThrow) {
  std::mt19937 rng(5);
  const AttnResQueries q = random_queries(rng, 2, 4);
  AttnResStream st(q, 1, 1e-5f, AttnResMode::Reference);
  std::vector<float> emb(4, 1.0f), h(4);
  st.start(emb.data(), 1);
  EXPECT_THROW(st.mlp_input(0, h.data()), Error);
  EXPECT_THROW(st.attn_input(1, h.data()), Error);
  EXPECT_THROW(st.final_output(h.data()), Error);
  st.attn_input(0, h.data());
  EXPECT_THROW(AttnResStream(q, 0, 1e-5f, AttnResMode::Reference), Error);
  AttnResQueries bad = q;
  bad.mlp.pop_back();
  EXPECT_THROW(AttnResStream(bad, 2, 1e-5f, AttnResMode::TwoPhase), Error);
}
