// The grouped expert GEMMs' CPU references (kernels/moe_gemm.h) against the f32 grouped GLU
// (moe_grouped_glu) on the same bf16 weights: they differ only by the bf16 rounding of x and of
// the GLU product between the two GEMMs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/moe.h"
#include "kernels/moe_gemm.h"
#include "test_util.h"

namespace ds {
namespace {

TensorView i32v(std::vector<int32_t>& v, int64_t n) {
  return TensorView::contiguous(v.data(), DType::I32, {n}, Device::Cpu);
}

std::vector<uint16_t> to_bf16(const std::vector<float>& f) {
  std::vector<uint16_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) b[i] = f32_to_bf16(f[i]);
  return b;
}

TEST(MoeGemm, CpuMatchesGroupedGluUpToBf16Rounding) {
  const int64_t T = 7, k = 2, E = 4, D = 24, I = 16, n = T * k;
  std::vector<uint16_t> xb = to_bf16(test::randn(size_t(T * D), 3));
  std::vector<float> xf(xb.size());
  for (size_t i = 0; i < xb.size(); ++i) xf[i] = bf16_to_f32(xb[i]);
  std::vector<std::vector<uint16_t>> mats;
  for (int64_t m = 0; m < 3 * E; ++m)
    mats.push_back(to_bf16(test::randn(size_t(I * D), 40 + uint32_t(m), 0.3f)));
  std::vector<const void*> ptrs;
  for (const auto& m : mats) ptrs.push_back(m.data());
  // Expert 1 gets no rows, expert 3 most of them.
  std::vector<int32_t> expert{3, 0, 3, 2, 0, 3, 3, 2, 2, 3, 0, 3, 3, 0}, off(E + 1), active(E + 1), tok(n),
      pos(n);
  const MoeGroups g{i32v(off, E + 1), i32v(active, E + 1), i32v(tok, n), i32v(pos, n)};
  moe_group(TensorView::contiguous(expert.data(), DType::I32, {T, k}, Device::Cpu), E, g);
  const GroupedExperts w{ptrs.data(), DType::BF16, E, I, D, Device::Cpu};
  ASSERT_TRUE(moe_gemm_supported(w));

  std::vector<float> h_ref(size_t(n * I)), y_ref(size_t(n * D)), y(size_t(n * D), -1.0f);
  moe_grouped_glu(TensorView::matrix(xf.data(), DType::F32, T, D), w, g,
                  TensorView::matrix(h_ref.data(), DType::F32, n, I),
                  TensorView::matrix(y_ref.data(), DType::F32, n, D));
  std::vector<uint16_t> h(size_t(n * I));
  moe_gemm_glu(TensorView::matrix(xb.data(), DType::BF16, T, D), w, g,
               TensorView::matrix(h.data(), DType::BF16, n, I));
  for (size_t i = 0; i < h.size(); ++i)
    ASSERT_NEAR(bf16_to_f32(h[i]), h_ref[i], 4e-3 * std::fabs(h_ref[i]) + 1e-6) << "h element " << i;
  moe_gemm_down(TensorView::matrix(h.data(), DType::BF16, n, I), w, g,
                TensorView::matrix(y.data(), DType::F32, n, D));
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i)
    num += double(y[i] - y_ref[i]) * (y[i] - y_ref[i]), den += double(y_ref[i]) * y_ref[i];
  EXPECT_LE(std::sqrt(num / den), 5e-3);
  EXPECT_GT(std::sqrt(num / den), 0.0);  // h really went through bf16

  // Wrong dtypes are refused with the operation's name.
  EXPECT_THROW(moe_gemm_glu(TensorView::matrix(xf.data(), DType::F32, T, D), w, g,
                            TensorView::matrix(h.data(), DType::BF16, n, I)),
               Error);
  GroupedExperts wf = w;
  wf.dtype = DType::F32;
  EXPECT_FALSE(moe_gemm_supported(wf));
}

}  // namespace
}  // namespace ds
