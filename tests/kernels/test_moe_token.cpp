// moe_token_glu's CPU implementation (the reference of the CUDA kernels) against per-expert and
// shared-expert linear() products combined by hand.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/activation.h"
#include "kernels/elementwise.h"
#include "kernels/expert_linear.h"
#include "kernels/linear.h"
#include "kernels/moe_token.h"
#include "test_util.h"

namespace ds {
namespace {

// y = Σ_j w_j · down_j(silu(gate_j x) ⊙ up_j x) for one row x, through linear().
void glu_into(const float* x, int64_t D, int64_t I, const std::vector<float>& g, const std::vector<float>& u,
              const std::vector<float>& dn, float m, std::vector<float>& y) {
  std::vector<float> gv(static_cast<size_t>(I)), uv(static_cast<size_t>(I)), yv(static_cast<size_t>(D));
  const TensorView xr = TensorView::matrix(const_cast<float*>(x), DType::F32, 1, D);
  linear(xr, WeightView{g.data(), DType::F32, I, D}, TensorView::matrix(gv.data(), DType::F32, 1, I));
  linear(xr, WeightView{u.data(), DType::F32, I, D}, TensorView::matrix(uv.data(), DType::F32, 1, I));
  for (int64_t i = 0; i < I; ++i) gv[size_t(i)] = siluf(gv[size_t(i)]) * uv[size_t(i)];
  linear(TensorView::matrix(gv.data(), DType::F32, 1, I), WeightView{dn.data(), DType::F32, D, I},
         TensorView::matrix(yv.data(), DType::F32, 1, D));
  for (int64_t d = 0; d < D; ++d) y[size_t(d)] += m * yv[size_t(d)];
}

TEST(MoeTokenGlu, WeightedExpertsPlusSharedExpert) {
  const int64_t T = 3, k = 2, E = 4, D = 16, I = 8;
  std::vector<float> x = test::randn(size_t(T * D), 1);
  std::vector<std::vector<float>> m;  // gate, up, down of each expert, then the shared expert's
  for (int64_t e = 0; e <= E; ++e) {
    m.push_back(test::randn(size_t(I * D), 10 + uint32_t(e), 0.3f));
    m.push_back(test::randn(size_t(I * D), 20 + uint32_t(e), 0.3f));
    m.push_back(test::randn(size_t(D * I), 30 + uint32_t(e), 0.3f));
  }
  std::vector<const void*> ptrs(size_t(3 * E));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t w = 0; w < 3; ++w) ptrs[size_t(w * E + e)] = m[size_t(3 * e + w)].data();
  std::vector<int32_t> expert{3, 0, 0, 3, 1, 1};  // token 2 picks expert 1 twice: two terms
  std::vector<float> weight{0.7f, 0.3f, 1.5f, -0.25f, 0.5f, 0.5f};
  for (bool shared : {false, true})
    for (bool acc : {false, true}) {
      const int64_t ks = k + (shared ? 1 : 0);
      std::vector<float> h(size_t(T * ks * I)), y = test::randn(size_t(T * D), 5), want = y;
      MoeTokenGluArgs a;
      a.x = TensorView::matrix(x.data(), DType::F32, T, D);
      a.expert = TensorView::contiguous(expert.data(), DType::I32, {T, k}, Device::Cpu);
      a.weight = TensorView::contiguous(weight.data(), DType::F32, {T, k}, Device::Cpu);
      a.experts = GroupedExperts{ptrs.data(), DType::F32, E, I, D, Device::Cpu};
      if (shared) {
        a.shared_gate = WeightView{m[size_t(3 * E)].data(), DType::F32, I, D};
        a.shared_up = WeightView{m[size_t(3 * E + 1)].data(), DType::F32, I, D};
        a.shared_down = WeightView{m[size_t(3 * E + 2)].data(), DType::F32, D, I};
      }
      a.h = TensorView::matrix(h.data(), DType::F32, T * ks, I);
      a.y = TensorView::matrix(y.data(), DType::F32, T, D);
      a.accumulate = acc;
      moe_token_glu(a);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<float> row(size_t(D), 0.0f);
        for (int64_t j = 0; j < k; ++j) {
          const int32_t e = expert[size_t(t * k + j)];
          glu_into(x.data() + t * D, D, I, m[size_t(3 * e)], m[size_t(3 * e + 1)], m[size_t(3 * e + 2)],
                   weight[size_t(t * k + j)], row);
        }
        if (shared)
          glu_into(x.data() + t * D, D, I, m[size_t(3 * E)], m[size_t(3 * E + 1)], m[size_t(3 * E + 2)], 1.0f,
                   row);
        for (int64_t d = 0; d < D; ++d)
          want[size_t(t * D + d)] = (acc ? want[size_t(t * D + d)] : 0.0f) + row[size_t(d)];
      }
      EXPECT_LE(test::max_scaled_err(y.data(), want.data(), y.size(), 1e-5, 1e-5), 1.0)
          << "shared=" << shared << " acc=" << acc;
    }
}

TEST(MoeTokenGlu, RejectsASharedExpertOfAnotherShape) {
  const int64_t T = 1, k = 1, E = 1, D = 8, I = 8;
  std::vector<float> x(static_cast<size_t>(D)), w(static_cast<size_t>(I * D)), h(static_cast<size_t>(2 * I)),
      y(static_cast<size_t>(D)), weight{1.0f};
  std::vector<int32_t> expert{0};
  std::vector<const void*> ptrs{w.data(), w.data(), w.data()};
  MoeTokenGluArgs a;
  a.x = TensorView::matrix(x.data(), DType::F32, T, D);
  a.expert = TensorView::contiguous(expert.data(), DType::I32, {T, k}, Device::Cpu);
  a.weight = TensorView::contiguous(weight.data(), DType::F32, {T, k}, Device::Cpu);
  a.experts = GroupedExperts{ptrs.data(), DType::F32, E, I, D, Device::Cpu};
  a.shared_gate = WeightView{w.data(), DType::F32, I / 2, D};
  a.shared_up = WeightView{w.data(), DType::F32, I / 2, D};
  a.shared_down = WeightView{w.data(), DType::F32, D, I / 2};
  a.h = TensorView::matrix(h.data(), DType::F32, 2 * T, I);
  a.y = TensorView::matrix(y.data(), DType::F32, T, D);
  EXPECT_THROW(moe_token_glu(a), Error);
}

// MXFP4 experts with K3's SiTU-GLU: the plain loops against expert_linear (the CPU MXFP4 GEMM, which
// decodes whole rows through core/mxfp4) and situ_mul_rows, term by term.
TEST(MoeTokenGlu, Mxfp4SituExpertsMatchExpertLinear) {
  const int64_t T = 2, k = 2, E = 3, D = 64, I = 32;
  std::mt19937 rng(5);
  std::vector<std::vector<uint8_t>> codes, scales;
  for (int64_t m = 0; m < 3 * E; ++m) {
    std::vector<uint8_t> c(size_t(I * D / 2)), s(size_t(I * D / 32));
    for (auto& b : c) b = uint8_t(rng());
    for (auto& b : s) b = uint8_t(122 + rng() % 4);
    codes.push_back(c), scales.push_back(s);
  }
  std::vector<const void*> ptrs, sptrs;
  for (int64_t m = 0; m < 3 * E; ++m)
    ptrs.push_back(codes[size_t(m)].data()), sptrs.push_back(scales[size_t(m)].data());
  std::vector<int32_t> expert{2, 0, 1, 1};
  std::vector<float> x = test::randn(size_t(T * D), 6), wt{0.7f, 0.3f, 0.5f, 0.5f}, h(size_t(T * k * I));
  std::vector<float> y(size_t(T * D));
  MoeTokenGluArgs a;
  a.x = TensorView::matrix(x.data(), DType::F32, T, D);
  a.expert = TensorView::contiguous(expert.data(), DType::I32, {T, k}, Device::Cpu);
  a.weight = TensorView::contiguous(wt.data(), DType::F32, {T, k}, Device::Cpu);
  a.experts.ptrs = ptrs.data(), a.experts.scales = sptrs.data(), a.experts.dtype = DType::U8;
  a.experts.E = E, a.experts.I = I, a.experts.D = D, a.experts.act.situ = true;
  a.h = TensorView::matrix(h.data(), DType::F32, T * k, I);
  a.y = TensorView::matrix(y.data(), DType::F32, T, D);
  moe_token_glu(a);

  auto mat = [&](int64_t m, int64_t rows, int64_t cols) {
    return ExpertLinear(
        Mxfp4View{codes[size_t(m)].data(), scales[size_t(m)].data(), rows, cols, Device::Cpu});
  };
  std::vector<float> g(static_cast<size_t>(I)), u(static_cast<size_t>(I)), o(static_cast<size_t>(D));
  const auto row = [](std::vector<float>& v, int64_t n) {
    return TensorView::matrix(v.data(), DType::F32, 1, n);
  };
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> want(size_t(D), 0.0f);
    const TensorView xr = TensorView::matrix(x.data() + t * D, DType::F32, 1, D);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = expert[size_t(t * k + j)];
      expert_linear(xr, mat(e, I, D), row(g, I));
      expert_linear(xr, mat(E + e, I, D), row(u, I));
      situ_mul_rows(row(g, I), row(u, I), row(g, I), 4.0f, 25.0f);
      expert_linear(row(g, I), mat(2 * E + e, D, I), row(o, D));
      for (int64_t d = 0; d < D; ++d) want[size_t(d)] += wt[size_t(t * k + j)] * o[size_t(d)];
    }
    for (int64_t d = 0; d < D; ++d)
      EXPECT_NEAR(y[size_t(t * D + d)], want[size_t(d)], 1e-5f * (1.0f + std::fabs(want[size_t(d)])))
          << "token " << t << " row " << d;
  }
  // A shared expert is refused next to MXFP4 experts (its dtype cannot be the experts').
  std::vector<float> sg(size_t(I * D));
  a.shared_gate = a.shared_up = WeightView{sg.data(), DType::F32, I, D};
  a.shared_down = WeightView{sg.data(), DType::F32, D, I};
  EXPECT_THROW(moe_token_glu(a), Error);
}

}  // namespace
}  // namespace ds
