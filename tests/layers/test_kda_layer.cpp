// KdaLayer: schedule invariance of the full KDA mixer on random weights — prefill in pieces ==
// one shot, chunked == recurrent, several sequences in one batch == separate runs — and state
// checkpoints (S and conv window) at aligned and unaligned offsets == the state after a prefill of
// exactly that prefix.
#include <gtest/gtest.h>

#include "core/check.h"
#include "layers/kda_layer.h"
#include "random_weights.h"

namespace ds {
namespace {

using testing::RandomWeights;

constexpr int64_t kD = 16, kH = 2, kK = 8, kP = kH * kK, kR = 4, kW = 4;

KdaConfig small_kda() {
  KdaConfig c;
  c.n_head = int(kH);
  c.head_dim = int(kK);
  c.conv_kernel = int(kW);
  return c;
}

KdaParams random_params(RandomWeights& rw) {
  KdaParams p;
  p.q_proj = rw.bf16(kP, kD), p.k_proj = rw.bf16(kP, kD), p.v_proj = rw.bf16(kP, kD);
  p.f_a = rw.bf16(kR, kD), p.f_b = rw.bf16(kP, kR), p.b_proj = rw.bf16(kH, kD);
  p.g_a = rw.bf16(kR, kD), p.g_b = rw.bf16(kP, kR), p.o_proj = rw.bf16(kD, kP);
  p.conv_q = rw.vec(kP * kW, 0.5f), p.conv_k = rw.vec(kP * kW, 0.5f), p.conv_v = rw.vec(kP * kW, 0.5f);
  p.a_log = {0.3f, 1.7f};
  p.dt_bias = rw.vec(kP, 1.0f, -3.0f);
  p.o_norm = rw.vec(kK, 0.1f, 1.0f);
  return p;
}

KdaState fresh() {
  KdaState s;
  s.init(int(kH), int(kK), int(kW));
  return s;
}

// Runs x [T, D] through one sequence in the given pieces; returns y [T, D].
std::vector<float> run_pieces(const KdaLayer& L, const std::vector<float>& x,
                              const std::vector<int64_t>& pieces, KdaState* st) {
  std::vector<float> y(x.size());
  int64_t off = 0;
  for (int64_t n : pieces) {
    LayerBatch b;
    b.add(n);
    const KdaSeqIO io[1] = {{st->view(), {}, {}}};
    L.forward(b, io, x.data() + off * kD, y.data() + off * kD);
    off += n;
  }
  return y;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

TEST(KdaLayer, PiecesChunkedAndRecurrentAgree) {
  RandomWeights rw(21);
  const KdaParams p = random_params(rw);
  const KdaLayer chunked(small_kda(), 1e-5f, kD, p, KdaRunOptions{8, 1});
  const KdaLayer recurrent(small_kda(), 1e-5f, kD, p, KdaRunOptions{8, 1 << 20});
  const int64_t T = 37;
  const std::vector<float> x = rw.vec(T * kD, 1.0f);
  KdaState a = fresh(), b = fresh(), c = fresh();
  const std::vector<float> one = run_pieces(chunked, x, {T}, &a);
  expect_near(run_pieces(chunked, x, {5, 1, 13, 1, 17}, &b), one, 2e-5f, "pieces");
  expect_near(run_pieces(recurrent, x, {T}, &c), one, 2e-5f, "recurrent");
  expect_near(b.S, a.S, 2e-5f, "pieces.S");
  expect_near(c.S, a.S, 2e-5f, "recurrent.S");
  expect_near(b.conv, a.conv, 1e-5f, "pieces.conv");
  expect_near(c.conv, a.conv, 1e-5f, "recurrent.conv");
}

TEST(KdaLayer, CheckpointsEqualPrefixStates) {
  RandomWeights rw(22);
  const KdaLayer layer(small_kda(), 1e-5f, kD, random_params(rw), KdaRunOptions{8, 1});
  const int64_t T = 37;
  const std::vector<float> x = rw.vec(T * kD, 1.0f);
  // A first piece of 2 tokens, then a piece of 35 with checkpoints at aligned (8, 16, end) and
  // unaligned (1, 3, 21) offsets; offsets count from the piece start.
  KdaState st = fresh();
  run_pieces(layer, x, {2}, &st);
  const std::vector<int64_t> at = {1, 3, 8, 16, 21, 35};
  std::vector<KdaState> got(at.size(), fresh());
  {
    LayerBatch b;
    b.add(T - 2);
    std::vector<KdaStateView> to;
    for (KdaState& g : got) to.push_back(g.view());
    const KdaSeqIO io[1] = {{st.view(), at, to}};
    std::vector<float> y((T - 2) * kD);
    layer.forward(b, io, x.data() + 2 * kD, y.data());
  }
  ASSERT_EQ(got.size(), at.size());
  for (size_t i = 0; i < at.size(); ++i) {
    KdaState ref = fresh();
    run_pieces(layer, {x.begin(), x.begin() + (2 + at[i]) * kD}, {2 + at[i]}, &ref);
    expect_near(got[i].S, ref.S, 2e-5f, "S@" + std::to_string(at[i]));
    expect_near(got[i].conv, ref.conv, 1e-5f, "conv@" + std::to_string(at[i]));
  }
  expect_near(st.S, got.back().S, 0.0f, "final");
}

TEST(KdaLayer, BatchOfDifferentLengthsEqualsSeparateRuns) {
  RandomWeights rw(23);
  const KdaLayer layer(small_kda(), 1e-5f, kD, random_params(rw), KdaRunOptions{8, 1});
  const std::vector<int64_t> len = {19, 1, 4};
  std::vector<std::vector<float>> xs;
  std::vector<float> x;
  LayerBatch b;
  for (int64_t n : len) {
    xs.push_back(rw.vec(n * kD, 1.0f));
    x.insert(x.end(), xs.back().begin(), xs.back().end());
    b.add(n);
  }
  std::vector<KdaState> st(3, fresh());
  const KdaSeqIO io[3] = {{st[0].view(), {}, {}}, {st[1].view(), {}, {}}, {st[2].view(), {}, {}}};
  std::vector<float> y(x.size());
  layer.forward(b, io, x.data(), y.data());
  for (int s = 0; s < 3; ++s) {
    KdaState ref = fresh();
    const std::vector<float> yr = run_pieces(layer, xs[size_t(s)], {len[size_t(s)]}, &ref);
    expect_near({y.begin() + b.begin(s) * kD, y.begin() + (b.begin(s) + len[size_t(s)]) * kD}, yr, 1e-6f,
                "y");
    expect_near(st[size_t(s)].S, ref.S, 1e-6f, "S");
  }
}

TEST(KdaLayer, RejectsBadShapesAndCheckpointOffsets) {
  RandomWeights rw(24);
  KdaParams p = random_params(rw);
  p.dt_bias.pop_back();
  EXPECT_THROW(KdaLayer(small_kda(), 1e-5f, kD, p), Error);
  const KdaLayer layer(small_kda(), 1e-5f, kD, random_params(rw));
  KdaState st = fresh();
  KdaState got = fresh();
  const KdaStateView to[1] = {got.view()};
  const std::vector<int64_t> bad = {5};
  LayerBatch b;
  b.add(3);
  const KdaSeqIO io[1] = {{st.view(), bad, to}};
  const std::vector<float> x = rw.vec(3 * kD, 1.0f);
  std::vector<float> y(x.size());
  EXPECT_THROW(layer.forward(b, io, x.data(), y.data()), Error);
  for (float v : st.conv) ASSERT_EQ(v, 0.0f);  // rejected before any state change
  KdaState wrong;
  wrong.init(3, int(kK), int(kW));
  const KdaSeqIO io2[1] = {{wrong.view(), {}, {}}};
  EXPECT_THROW(layer.forward(b, io2, x.data(), y.data()), Error);
}

}  // namespace
}  // namespace ds
