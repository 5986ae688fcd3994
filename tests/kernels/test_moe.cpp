// The device-MoE kernels' CPU implementations (kernels/moe.h) against hand-computed routing and
// grouping and against per-expert linear(); linear_heads against per-head products; fill_uniform,
// argmax_rows and StepGraph's CPU semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "kernels/activation.h"
#include "kernels/argmax.h"
#include "kernels/elementwise.h"
#include "kernels/graph.h"
#include "kernels/linear.h"
#include "kernels/moe.h"
#include "test_util.h"

namespace ds {
namespace {

TensorView i32v(std::vector<int32_t>& v, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::I32, shape, Device::Cpu);
}
TensorView f32v(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::F32, shape, Device::Cpu);
}

TEST(MoeRoute, BiasSelectsUnbiasedScoresWeightTiesToLowerId) {
  // Token 0: logits favour e1 > e0 > e2 = e3; the bias lifts e3 to the top. Token 1: all equal, so
  // e3 (bias) then e0 (tie to the lower id); without the bias e0, e1.
  std::vector<float> logits{1.0f, 2.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f}, bias{0.0f, 0.0f, 0.0f, 0.9f};
  std::vector<int32_t> expert(4);
  std::vector<float> weight(4);
  MoeRouteArgs a{f32v(logits, {2, 4}), f32v(bias, {4}),     2, true, 2.5f,
                 i32v(expert, {2, 2}), f32v(weight, {2, 2})};
  moe_route(a);
  EXPECT_EQ(expert, (std::vector<int32_t>{3, 1, 3, 0}));
  const float s1 = sigmoidf(2.0f), s3 = sigmoidf(0.0f);
  EXPECT_FLOAT_EQ(weight[0], s3 / (s1 + s3) * 2.5f);
  EXPECT_FLOAT_EQ(weight[1], s1 / (s1 + s3) * 2.5f);
  EXPECT_FLOAT_EQ(weight[2], 1.25f);
  a.bias = {};
  a.renormalize = false;
  moe_route(a);
  EXPECT_EQ(expert, (std::vector<int32_t>{1, 0, 0, 1}));
  EXPECT_FLOAT_EQ(weight[1], sigmoidf(1.0f) * 2.5f);
}

TEST(MoeGroup, RowsByExpertInTokenOrder) {
  std::vector<int32_t> expert{2, 0, 0, 2, 2, 1}, off(5), active(5), tok(6), pos(6);  // T = 3, k = 2, E = 4
  const MoeGroups g{i32v(off, {5}), i32v(active, {5}), i32v(tok, {6}), i32v(pos, {6})};
  moe_group(i32v(expert, {3, 2}), 4, g);
  EXPECT_EQ(off, (std::vector<int32_t>{0, 2, 3, 6, 6}));
  EXPECT_EQ(std::vector<int32_t>(active.begin(), active.begin() + 4), (std::vector<int32_t>{3, 0, 1, 2}));
  EXPECT_EQ(tok, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(pos, (std::vector<int32_t>{3, 0, 1, 4, 5, 2}));
  expert[0] = 4;
  EXPECT_THROW(moe_group(i32v(expert, {3, 2}), 4, g), Error);
}

TEST(MoeGroupedGlu, MatchesPerExpertLinear) {
  const int64_t T = 5, k = 2, E = 3, D = 16, I = 8;
  std::vector<float> x = test::randn(size_t(T * D), 1);
  std::vector<std::vector<float>> gate, up, down;
  std::vector<const void*> ptrs(3 * E);
  for (int64_t e = 0; e < E; ++e) {
    gate.push_back(test::randn(size_t(I * D), 10 + uint32_t(e), 0.3f));
    up.push_back(test::randn(size_t(I * D), 20 + uint32_t(e), 0.3f));
    down.push_back(test::randn(size_t(D * I), 30 + uint32_t(e), 0.3f));
  }
  for (int64_t e = 0; e < E; ++e)
    ptrs[size_t(e)] = gate[size_t(e)].data(), ptrs[size_t(E + e)] = up[size_t(e)].data(),
    ptrs[size_t(2 * E + e)] = down[size_t(e)].data();
  std::vector<int32_t> expert{0, 2, 2, 0, 2, 0, 0, 2, 2, 0}, off(E + 1), active(E + 1), tok(T * k),
      pos(T * k);
  const MoeGroups g{i32v(off, {E + 1}), i32v(active, {E + 1}), i32v(tok, {T * k}), i32v(pos, {T * k})};
  moe_group(i32v(expert, {T, k}), E, g);
  std::vector<float> h(size_t(T * k * I)), y(size_t(T * k * D));
  const GroupedExperts w{ptrs.data(), DType::F32, E, I, D, Device::Cpu};
  moe_grouped_glu(TensorView::matrix(x.data(), DType::F32, T, D), w, g,
                  TensorView::matrix(h.data(), DType::F32, T * k, I),
                  TensorView::matrix(y.data(), DType::F32, T * k, D));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = expert[size_t(t * k + j)];
      std::vector<float> gv(I), uv(I), yv(D);
      const TensorView xr = TensorView::matrix(x.data() + t * D, DType::F32, 1, D);
      linear(xr, WeightView{gate[size_t(e)].data(), DType::F32, I, D},
             TensorView::matrix(gv.data(), DType::F32, 1, I));
      linear(xr, WeightView{up[size_t(e)].data(), DType::F32, I, D},
             TensorView::matrix(uv.data(), DType::F32, 1, I));
      for (int64_t i = 0; i < I; ++i) gv[size_t(i)] = siluf(gv[size_t(i)]) * uv[size_t(i)];
      linear(TensorView::matrix(gv.data(), DType::F32, 1, I),
             WeightView{down[size_t(e)].data(), DType::F32, D, I},
             TensorView::matrix(yv.data(), DType::F32, 1, D));
      const float* got = y.data() + pos[size_t(t * k + j)] * D;
      EXPECT_LE(test::max_scaled_err(got, yv.data(), size_t(D), 1e-5, 1e-5), 1.0) << t << "," << j;
    }
}

TEST(LinearHeads, EqualsPerHeadProducts) {
  const int64_t T = 3, H = 4, dn = 8, R = 6, dq = 12;  // x head h at column h*dq, weight [R, dn] per head
  std::vector<float> x = test::randn(size_t(T * H * dq), 2), w = test::randn(size_t(H * R * dn), 3);
  std::vector<float> y(size_t(T * H * R)), ref(size_t(T * H * R));
  linear_heads(TensorView::matrix(x.data(), DType::F32, T, dn, H * dq),
               WeightView{w.data(), DType::F32, R, dn}, TensorView::matrix(y.data(), DType::F32, T, R, H * R),
               H, {dq, R * dn, R});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < R; ++r) {
        double s = 0;
        for (int64_t c = 0; c < dn; ++c)
          s += double(w[size_t((h * R + r) * dn + c)]) * x[size_t(t * H * dq + h * dq + c)];
        ref[size_t(t * H * R + h * R + r)] = float(s);
      }
  EXPECT_LE(test::max_scaled_err(y.data(), ref.data(), y.size(), 1e-5, 1e-5), 1.0);
}

TEST(LinearFewRows, CpuIsLinearAndShapesAreChecked) {
  std::vector<float> x = test::randn(3 * 16, 5), w = test::randn(4 * 16, 6), y(12), ref(12);
  const WeightView wv{w.data(), DType::F32, 4, 16};
  const TensorView xv = TensorView::matrix(x.data(), DType::F32, 3, 16);
  linear_few_rows(xv, wv, TensorView::matrix(y.data(), DType::F32, 3, 4));
  linear(xv, wv, TensorView::matrix(ref.data(), DType::F32, 3, 4));
  EXPECT_EQ(y, ref);
  std::vector<float> x9(9 * 16);
  EXPECT_FALSE(linear_few_rows_fits(TensorView::matrix(x9.data(), DType::F32, 9, 16), wv));
  EXPECT_THROW(linear_few_rows(TensorView::matrix(x9.data(), DType::F32, 9, 16), wv,
                               TensorView::matrix(std::vector<float>(36).data(), DType::F32, 9, 4)),
               Error);
}

TEST(FillUniform, DeterministicInRangeAndBf16IsRoundedF32) {
  std::vector<float> a(1000), b(1000);
  std::vector<uint16_t> c(1000);
  fill_uniform(f32v(a, {1000}), 5, 2.0f, 1.0f);
  fill_uniform(f32v(b, {1000}), 5, 2.0f, 1.0f);
  fill_uniform(TensorView::contiguous(c.data(), DType::BF16, {1000}, Device::Cpu), 5, 2.0f, 1.0f);
  EXPECT_EQ(a, b);
  double mean = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a[i], -1.0f);
    EXPECT_LT(a[i], 3.0f);
    EXPECT_EQ(c[i], f32_to_bf16(a[i]));
    mean += a[i] / 1000.0;
  }
  EXPECT_NEAR(mean, 1.0, 0.15);
  fill_uniform(f32v(b, {1000}), 6, 2.0f, 1.0f);
  EXPECT_NE(a, b);
}

TEST(ArgmaxRows, TiesLowestNaNSkipped) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{1, 3, 3, 0, nan, -1, nan, -2, nan, nan, nan, nan};
  std::vector<int32_t> out(3);
  argmax_rows(TensorView::matrix(x.data(), DType::F32, 3, 4), i32v(out, {3}));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, 0}));
}

TEST(StepGraphCpu, CaptureRecordsReplayRuns) {
  int runs = 0;
  StepGraph g;
  EXPECT_TRUE(g.empty());
  EXPECT_THROW(g.replay(), Error);
  g.capture(Device::Cpu, [&] { ++runs; });
  EXPECT_EQ(runs, 0);
  g.replay();
  g.replay();
  EXPECT_EQ(runs, 2);
  StepGraph h = std::move(g);
  EXPECT_TRUE(g.empty());
  h.replay();
  EXPECT_EQ(runs, 3);
}

}  // namespace
}  // namespace ds
