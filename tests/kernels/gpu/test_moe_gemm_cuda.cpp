// The grouped expert GEMMs (kernels/moe_gemm.h) on CUDA against their CPU references on the same
// bf16 inputs: groups of 0 rows, of less than one 16-row fragment and of several 128-row tiles;
// inner sizes and output widths that are not multiples of the kernels' 32 / 64 / 128 / 256 tiles; the
// warpgroup-MMA kernel and the mma.sync one.
// ctest label "gpu"; skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "kernels/moe_gemm.h"
#include "moe_groups_case.h"

namespace ds {
namespace {

std::vector<uint16_t> rand_bf16(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = f32_to_bf16(d(rng));
  return v;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i)
    num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / std::max(den, 1e-30));
}

std::vector<float> bf16_floats(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_f32(v[i]);
  return f;
}

void run_case(int64_t T, int64_t k, int64_t E, int64_t D, int64_t I, uint32_t seed, MoeGemmKernel kernel) {
  const int64_t n = T * k;
  test::GroupsCase groups = test::make_groups_case(T, k, E, seed);

  std::vector<std::vector<uint16_t>> mats;
  std::vector<Buffer> dmats;
  std::vector<const void*> hp, dp;
  for (int64_t m = 0; m < 3 * E; ++m) {
    mats.push_back(rand_bf16(size_t(I * D), seed * 100 + uint32_t(m), 0.1f));
    dmats.push_back(Buffer::from_host<uint16_t>(Device::Cuda, mats.back()));
    hp.push_back(mats.back().data()), dp.push_back(dmats.back().data());
  }
  const Buffer dtab = Buffer::from_host<const void*>(Device::Cuda, dp);
  // x with a row stride wider than D (a column slice of a wider matrix).
  const int64_t ldx = D + 16;
  std::vector<uint16_t> x = rand_bf16(size_t(T * ldx), seed + 1, 1.0f);
  const Buffer dx = Buffer::from_host<uint16_t>(Device::Cuda, x);
  std::vector<uint16_t> h(size_t(n * I));
  const Buffer dh(Device::Cuda, n * I * 2);
  const GroupedExperts wc{hp.data(), DType::BF16, E, I, D, Device::Cpu};
  const GroupedExperts wd{static_cast<const void* const*>(dtab.data()), DType::BF16, E, I, D, Device::Cuda};
  const MoeGroups gc = groups.view(Device::Cpu), gd = groups.view(Device::Cuda);
  moe_gemm_glu(TensorView::matrix(x.data(), DType::BF16, T, D, ldx), wc, gc,
               TensorView::matrix(h.data(), DType::BF16, n, I));
  moe_gemm_glu(TensorView::matrix(dx.data(), DType::BF16, T, D, ldx, Device::Cuda), wd, gd,
               TensorView::matrix(dh.data(), DType::BF16, n, I, I, Device::Cuda), kernel);
  const std::vector<float> hc = bf16_floats(h), hg = bf16_floats(dh.to_host<uint16_t>());
  int far = 0;  // elements more than one bf16 step (plus a little) apart
  for (size_t i = 0; i < hc.size(); ++i) far += std::fabs(hc[i] - hg[i]) > 8e-3 * std::fabs(hc[i]) + 1e-4;
  const double eh = rel_l2(hg, hc);
  // The down product from the same (CPU) h on both sides, into rows of a wider y.
  const int64_t ldy = D + 8;
  std::vector<float> yc(size_t(n * ldy), 0.0f);
  Buffer dy = Buffer::from_host<float>(Device::Cuda, yc);
  const Buffer dhc = Buffer::from_host<uint16_t>(Device::Cuda, h);
  moe_gemm_down(TensorView::matrix(h.data(), DType::BF16, n, I), wc, gc,
                TensorView::matrix(yc.data(), DType::F32, n, D, ldy));
  moe_gemm_down(TensorView::matrix(dhc.data(), DType::BF16, n, I, I, Device::Cuda), wd, gd,
                TensorView::matrix(dy.data(), DType::F32, n, D, ldy, Device::Cuda), kernel);
  const std::vector<float> yg = dy.to_host<float>();
  const double ey = rel_l2(yg, yc);
  bool pad_untouched = true;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = D; c < ldy; ++c) pad_untouched &= yg[size_t(r * ldy + c)] == 0.0f;
  std::printf("    moe_gemm %s T=%lld k=%lld E=%lld D=%lld I=%lld: rel L2 glu %.3g (%d far), down %.3g\n",
              kernel == MoeGemmKernel::Auto ? "auto" : "mma.sync", (long long)T, (long long)k, (long long)E,
              (long long)D, (long long)I, eh, far, ey);
  EXPECT_LE(eh, 2e-3);
  EXPECT_LE(far, int(hc.size() / 1000));
  EXPECT_LE(ey, 1e-5);
  EXPECT_TRUE(pad_untouched);
}

// Each case through both kernels: Auto is the wgmma kernel where K % 64 == 0 (the second, third and
// fourth cases; the first's K of 264 and 200 falls back to mma.sync).
TEST(MoeGemmCuda, MatchesCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  for (const MoeGemmKernel kernel : {MoeGemmKernel::Auto, MoeGemmKernel::MmaSync}) {
    run_case(/*T=*/300, /*k=*/4, /*E=*/12, /*D=*/264, /*I=*/200, 1, kernel);  // tails in K, N and every tile
    run_case(/*T=*/5, /*k=*/2, /*E=*/6, /*D=*/64, /*I=*/128, 2, kernel);  // groups smaller than a fragment
    run_case(/*T=*/300, /*k=*/4, /*E=*/12, /*D=*/320, /*I=*/192, 4, kernel);   // N tails of 128 / 256 columns
    run_case(/*T=*/160, /*k=*/2, /*E=*/8, /*D=*/2304, /*I=*/1024, 3, kernel);  // Kimi-Linear expert shapes
  }
}

}  // namespace
}  // namespace ds
