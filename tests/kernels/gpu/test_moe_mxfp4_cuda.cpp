// MXFP4 routed experts on CUDA against the CPU references on the same bytes: the device decoding bit
// for bit (every code byte under the edge scales), the grouped expert GEMMs (kernels/moe_gemm.h) and
// the token-major GLU (kernels/moe_token.h) with MXFP4 experts and SiLU or K3's SiTU activation.
// ctest label "gpu"; skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../test_util.h"
#include "core/dtype.h"
#include "kernels/expert_linear.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "kernels/moe_gemm.h"
#include "kernels/moe_token.h"
#include "moe_groups_case.h"

namespace ds {
namespace {

class Mxfp4Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

// E routed experts with MXFP4 gate/up [I, D] and down [D, I]: random code bytes, scales 2^-9 .. 2^-5;
// the tables of the host copies and of the device copies.
struct MxExperts {
  int64_t E, I, D;
  std::vector<std::vector<uint8_t>> codes, scales;  // [3E]: gate, up, down of expert e at w * E + e
  std::vector<Buffer> dcodes, dscales;
  std::vector<const void*> hp, hs, dp, ds;
  Buffer dtab_p, dtab_s;

  MxExperts(int64_t E_, int64_t I_, int64_t D_, uint32_t seed) : E(E_), I(I_), D(D_) {
    std::mt19937 rng(seed);
    for (int64_t m = 0; m < 3 * E; ++m) {
      const int64_t n = I * D;
      std::vector<uint8_t> c(size_t(n / 2)), s(size_t(n / 32));
      for (auto& b : c) b = uint8_t(rng());
      for (auto& b : s) b = uint8_t(118 + rng() % 5);
      codes.push_back(c), scales.push_back(s);
    }
    for (int64_t m = 0; m < 3 * E; ++m) {
      dcodes.push_back(Buffer::from_host<uint8_t>(Device::Cuda, codes[size_t(m)]));
      dscales.push_back(Buffer::from_host<uint8_t>(Device::Cuda, scales[size_t(m)]));
      hp.push_back(codes[size_t(m)].data()), hs.push_back(scales[size_t(m)].data());
      dp.push_back(dcodes.back().data()), ds.push_back(dscales.back().data());
    }
    dtab_p = Buffer::from_host<const void*>(Device::Cuda, dp);
    dtab_s = Buffer::from_host<const void*>(Device::Cuda, ds);
  }
  GroupedExperts view(Device d, const ExpertAct& act) const {
    GroupedExperts g;
    const bool cpu = d == Device::Cpu;
    g.ptrs = cpu ? hp.data() : static_cast<const void* const*>(dtab_p.data());
    g.scales = cpu ? hs.data() : static_cast<const void* const*>(dtab_s.data());
    g.dtype = DType::U8, g.E = E, g.I = I, g.D = D, g.device = d, g.act = act;
    return g;
  }
};

bool same_bits_or_both_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4), std::memcpy(&y, &b, 4);
  return x == y;
}

// Every code byte under the edge scales (0 = the subnormal 2^-127, 1, 127, 253, 254 where large codes
// overflow to inf, 255 = NaN) and a few ordinary ones: the device's f32 and bf16 values equal the CPU's
// bit for bit (bf16 holds every E2M1 × E8M0 product exactly, so its rounding never acts).
TEST_F(Mxfp4Cuda, DequantMatchesCpuBitForBit) {
  const std::vector<uint8_t> scale_values{0, 1, 2, 100, 126, 127, 128, 200, 253, 254, 255};
  const int64_t rows = int64_t(scale_values.size()), cols = 512;  // 256 bytes per row: every code pair
  std::vector<uint8_t> codes(size_t(rows * cols / 2)), scales(size_t(rows * cols / 32));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / 2; ++b) codes[size_t(r * cols / 2 + b)] = uint8_t(b);
    for (int64_t s = 0; s < cols / 32; ++s) scales[size_t(r * cols / 32 + s)] = scale_values[size_t(r)];
  }
  const Buffer dc = Buffer::from_host<uint8_t>(Device::Cuda, codes),
               dsc = Buffer::from_host<uint8_t>(Device::Cuda, scales);
  for (DType dt : {DType::F32, DType::BF16}) {
    const int64_t n = rows * cols;
    std::vector<uint8_t> host(size_t(n * int64_t(dtype_size(dt))));
    Buffer dev(Device::Cuda, n * int64_t(dtype_size(dt)));
    mxfp4_dequant(Mxfp4View{codes.data(), scales.data(), rows, cols, Device::Cpu},
                  TensorView::contiguous(host.data(), dt, {n}, Device::Cpu));
    mxfp4_dequant(Mxfp4View{dc.as<uint8_t>(), dsc.as<uint8_t>(), rows, cols, Device::Cuda},
                  TensorView::contiguous(dev.data(), dt, {n}, Device::Cuda));
    const std::vector<uint8_t> got = dev.to_host<uint8_t>();
    int64_t diff = 0, inf = 0, zero_scale_nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
      float a, b;
      if (dt == DType::F32) {
        std::memcpy(&a, host.data() + 4 * i, 4), std::memcpy(&b, got.data() + 4 * i, 4);
      } else {
        uint16_t x, y;
        std::memcpy(&x, host.data() + 2 * i, 2), std::memcpy(&y, got.data() + 2 * i, 2);
        a = bf16_to_f32(x), b = bf16_to_f32(y);
      }
      diff += !same_bits_or_both_nan(a, b);
      inf += std::isinf(b);
      zero_scale_nonzero += i < cols && b != 0.0f;
    }
    EXPECT_EQ(diff, 0) << dtype_name(dt);
    EXPECT_GT(inf, 0) << "scale 254 with code 6 overflows in f32 arithmetic";
    EXPECT_GT(zero_scale_nonzero, 0) << "scale 0 (2^-127) must not flush to zero";
  }
}

// The grouped GEMMs: both run on bf16 inputs with f32 sums of exactly the same products (the weights
// decode exactly), so they differ by the f32 summation order, and h by at most one bf16 rounding step
// where the two sums straddle a rounding boundary (the bf16 test's tolerances).
void gemm_case(int64_t T, int64_t k, int64_t E, int64_t D, int64_t I, bool situ, uint32_t seed) {
  const int64_t n = T * k;
  const MxExperts w(E, I, D, seed);
  test::GroupsCase g = test::make_groups_case(T, k, E, seed + 1);
  ExpertAct act;
  act.situ = situ;
  const int64_t ldx = D + 16;
  std::vector<uint16_t> x(size_t(T * ldx));
  {
    const std::vector<float> xf = test::randn(x.size(), seed + 2);
    for (size_t i = 0; i < x.size(); ++i) x[i] = f32_to_bf16(xf[i]);
  }
  const Buffer dx = Buffer::from_host<uint16_t>(Device::Cuda, x);
  std::vector<uint16_t> h(size_t(n * I));
  const Buffer dh(Device::Cuda, n * I * 2);
  moe_gemm_glu(TensorView::matrix(x.data(), DType::BF16, T, D, ldx), w.view(Device::Cpu, act),
               g.view(Device::Cpu), TensorView::matrix(h.data(), DType::BF16, n, I));
  moe_gemm_glu(TensorView::matrix(dx.data(), DType::BF16, T, D, ldx, Device::Cuda), w.view(Device::Cuda, act),
               g.view(Device::Cuda), TensorView::matrix(dh.data(), DType::BF16, n, I, I, Device::Cuda));
  std::vector<float> hc(h.size()), hg(h.size());
  const std::vector<uint16_t> hgb = dh.to_host<uint16_t>();
  for (size_t i = 0; i < h.size(); ++i) hc[i] = bf16_to_f32(h[i]), hg[i] = bf16_to_f32(hgb[i]);
  int far = 0;
  for (size_t i = 0; i < hc.size(); ++i) far += std::fabs(hc[i] - hg[i]) > 8e-3 * std::fabs(hc[i]) + 1e-4;
  const double eh = test::rel_l2(hg, hc);
  const int64_t ldy = D + 8;
  std::vector<float> yc(size_t(n * ldy), 0.0f);
  Buffer dy = Buffer::from_host<float>(Device::Cuda, yc);
  const Buffer dhc = Buffer::from_host<uint16_t>(Device::Cuda, h);
  moe_gemm_down(TensorView::matrix(h.data(), DType::BF16, n, I), w.view(Device::Cpu, act),
                g.view(Device::Cpu), TensorView::matrix(yc.data(), DType::F32, n, D, ldy));
  moe_gemm_down(TensorView::matrix(dhc.data(), DType::BF16, n, I, I, Device::Cuda), w.view(Device::Cuda, act),
                g.view(Device::Cuda), TensorView::matrix(dy.data(), DType::F32, n, D, ldy, Device::Cuda));
  const std::vector<float> yg = dy.to_host<float>();
  const double ey = test::rel_l2(yg, yc);
  std::printf(
      "    moe_gemm MXFP4 %s T=%lld k=%lld E=%lld D=%lld I=%lld: rel L2 glu %.3g (%d far), down %.3g\n",
      situ ? "situ" : "silu", (long long)T, (long long)k, (long long)E, (long long)D, (long long)I, eh, far,
      ey);
  EXPECT_LE(eh, 2e-3);
  EXPECT_LE(far, int(hc.size() / 1000));
  EXPECT_LE(ey, 1e-5);
  double mag = 0;
  for (float v : hc) mag += std::fabs(v);
  EXPECT_GT(mag / double(hc.size()), 1e-3);  // the products are not trivially zero
}

TEST_F(Mxfp4Cuda, GroupedGemmMatchesCpu) {
  gemm_case(/*T=*/300, /*k=*/4, /*E=*/12, /*D=*/352, /*I=*/160, /*situ=*/true, 11);   // tails in K and N
  gemm_case(/*T=*/5, /*k=*/2, /*E=*/6, /*D=*/256, /*I=*/128, /*situ=*/false, 12);     // tiny groups
  gemm_case(/*T=*/40, /*k=*/8, /*E=*/16, /*D=*/3584, /*I=*/3072, /*situ=*/true, 13);  // K3 latent experts
}

// Token-major: 1 / 3 / 8 tokens, SiLU and SiTU, with accumulation; a token that picks one expert
// twice. Both sides sum f32 products of the same decoded weights: only the order differs.
TEST_F(Mxfp4Cuda, TokenGluMatchesCpu) {
  const int64_t k = 3, E = 6, D = 352, I = 224;
  const MxExperts w(E, I, D, 21);
  for (bool situ : {false, true})
    for (int64_t T : {1, 3, 8})
      for (bool acc : {false, true}) {
        ExpertAct act;
        act.situ = situ;
        std::vector<int32_t> ev(size_t(T * k));
        for (size_t i = 0; i < ev.size(); ++i) ev[i] = int32_t((i * 5 + i / 3) % E);
        ev[0] = ev[1];
        const Buffer dev_e = Buffer::from_host<int32_t>(Device::Cuda, ev);
        const int64_t xs = D + 8;
        const std::vector<float> x = test::randn(size_t(T * xs), 22), wt = test::randn(size_t(T * k), 23);
        std::vector<float> y = test::randn(size_t(T * D), 24), h(size_t(T * k * I));
        const Buffer dx = Buffer::from_host<float>(Device::Cuda, x),
                     dwt = Buffer::from_host<float>(Device::Cuda, wt);
        Buffer dy = Buffer::from_host<float>(Device::Cuda, y), dh(Device::Cuda, T * k * I * 4);
        for (Device d : {Device::Cpu, Device::Cuda}) {
          const bool cpu = d == Device::Cpu;
          MoeTokenGluArgs a;
          a.x = TensorView::matrix(cpu ? const_cast<float*>(x.data()) : dx.data(), DType::F32, T, D, xs, d);
          a.expert = TensorView::contiguous(cpu ? static_cast<void*>(ev.data()) : dev_e.data(), DType::I32,
                                            {T, k}, d);
          a.weight =
              TensorView::contiguous(cpu ? const_cast<float*>(wt.data()) : dwt.data(), DType::F32, {T, k}, d);
          a.experts = w.view(d, act);
          a.h = TensorView::matrix(cpu ? h.data() : dh.data(), DType::F32, T * k, I, I, d);
          a.y = TensorView::matrix(cpu ? y.data() : dy.data(), DType::F32, T, D, D, d);
          a.accumulate = acc;
          moe_token_glu(a);
        }
        const double e = test::rel_l2(dy.to_host<float>(), y);
        if (T == 8 && !acc)
          std::printf("    rel L2 token GLU (MXFP4, %s, 8 tokens) %.3g\n", situ ? "situ" : "silu", e);
        EXPECT_LE(e, 1e-5) << "situ=" << situ << " T=" << T << " acc=" << acc;
      }
}

}  // namespace
}  // namespace ds
