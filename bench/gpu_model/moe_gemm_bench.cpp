#include "moe_gemm_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#include "kernels/moe.h"
#include "kernels/moe_gemm.h"

namespace ds::bench {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TensorView bf16_mat(const Buffer& b, int64_t rows, int64_t cols) {
  return TensorView::matrix(b.data(), DType::BF16, rows, cols, cols, Device::Cuda);
}

// Best of `reps` timed runs of f (after one warm-up).
template <class F>
double best_s(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i <= reps; ++i) {
    synchronize(Device::Cuda);
    const double t0 = now_s();
    f();
    synchronize(Device::Cuda);
    if (i > 0) best = std::min(best, now_s() - t0);
  }
  return best;
}

}  // namespace

void run_moe_gemm_bench(const ModelConfig& c, const std::vector<int>& token_counts) {
  const int64_t E = c.moe.n_expert, k = c.moe.n_expert_per_token, D = c.hidden, I = c.moe.expert_intermediate;
  std::vector<Buffer> mats;
  std::vector<const void*> ptrs;
  for (int64_t m = 0; m < 3 * E; ++m) {
    mats.emplace_back(Device::Cuda, I * D * 2);
    fill_uniform(TensorView::contiguous(mats.back().data(), DType::BF16, {I * D}, Device::Cuda),
                 500 + uint64_t(m), 0.05f);
    ptrs.push_back(mats.back().data());
  }
  const Buffer table = Buffer::from_host<const void*>(Device::Cuda, ptrs);
  const GroupedExperts w{static_cast<const void* const*>(table.data()), DType::BF16, E, I, D, Device::Cuda};
  fmt::print("routed experts alone ({} experts, top-{}, D {}, I {}; uniform random routing; best of 5):\n", E,
             k, D, I);
  fmt::print("  {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9}\n", "tokens", "rows", "glu ms",
             "down ms", "TFLOP/s", "mma glu", "mma down", "TFLOP/s", "per-exp ms", "TFLOP/s");
  for (int T : token_counts) {
    const int64_t n = T * k;
    std::mt19937 rng(static_cast<uint32_t>(T));
    std::vector<int32_t> expert(static_cast<size_t>(n));
    for (int64_t t = 0; t < T; ++t) {  // k distinct experts per token
      for (int64_t j = 0; j < k; ++j) {
        int32_t e;
        do e = int32_t(rng() % uint32_t(E));
        while (std::find(expert.begin() + t * k, expert.begin() + t * k + j, e) !=
               expert.begin() + t * k + j);
        expert[size_t(t * k + j)] = e;
      }
    }
    const Buffer dexp = Buffer::from_host<int32_t>(Device::Cuda, expert), off(Device::Cuda, (E + 1) * 4),
                 act(Device::Cuda, (E + 1) * 4), tok(Device::Cuda, n * 4), pos(Device::Cuda, n * 4);
    auto i32 = [](const Buffer& b, int64_t len) {
      return TensorView::contiguous(b.data(), DType::I32, {len}, Device::Cuda);
    };
    const MoeGroups g{i32(off, E + 1), i32(act, E + 1), i32(tok, n), i32(pos, n)};
    moe_group(TensorView::contiguous(dexp.data(), DType::I32, {int64_t(T), k}, Device::Cuda), E, g);
    const Buffer x(Device::Cuda, int64_t(T) * D * 2), xg(Device::Cuda, n * D * 2), h(Device::Cuda, n * I * 2),
        gate(Device::Cuda, n * I * 4), up(Device::Cuda, n * I * 4), y(Device::Cuda, n * D * 4);
    fill_uniform(TensorView::contiguous(x.data(), DType::BF16, {int64_t(T) * D}, Device::Cuda), 7, 1.0f);
    // The default kernel (wgmma where it fits), then the mma.sync one.
    double glu_s[2], down_s[2];
    for (int v = 0; v < 2; ++v) {
      const MoeGemmKernel kern = v == 0 ? MoeGemmKernel::Auto : MoeGemmKernel::MmaSync;
      glu_s[v] = best_s(5, [&] { moe_gemm_glu(bf16_mat(x, T, D), w, g, bf16_mat(h, n, I), kern); });
      down_s[v] = best_s(5, [&] {
        moe_gemm_down(bf16_mat(h, n, I), w, g,
                      TensorView::matrix(y.data(), DType::F32, n, D, D, Device::Cuda), kern);
      });
    }
    // The same products as one cuBLASLt linear per expert and matrix (rows already grouped and bf16).
    const std::vector<int32_t> start = off.to_host<int32_t>();
    const double per_s = best_s(5, [&] {
      for (int pass = 0; pass < 3; ++pass)
        for (int64_t e = 0; e < E; ++e) {
          const int64_t r0 = start[size_t(e)], cnt = start[size_t(e) + 1] - r0;
          if (cnt == 0) continue;
          const bool dn = pass == 2;
          const int64_t in = dn ? I : D, out = dn ? D : I;
          const Buffer& src = dn ? h : xg;
          const TensorView xe =
              TensorView::matrix(src.as<uint16_t>() + r0 * in, DType::BF16, cnt, in, in, Device::Cuda);
          const Buffer& dst = dn ? y : (pass == 0 ? gate : up);
          linear(xe, WeightView{ptrs[size_t(pass * E + e)], DType::BF16, out, in, Device::Cuda},
                 TensorView::matrix(dst.as<float>() + r0 * out, DType::F32, cnt, out, out, Device::Cuda));
        }
    });
    const double flops = 2.0 * double(n) * double(D) * double(I) * 3.0;
    fmt::print("  {:>7} {:>8} {:>9.3f} {:>9.3f} {:>9.1f} {:>9.3f} {:>9.3f} {:>9.1f} {:>11.3f} {:>9.1f}\n", T,
               n, glu_s[0] * 1e3, down_s[0] * 1e3, flops / (glu_s[0] + down_s[0]) / 1e12, glu_s[1] * 1e3,
               down_s[1] * 1e3, flops / (glu_s[1] + down_s[1]) / 1e12, per_s * 1e3, flops / per_s / 1e12);
  }
}

}  // namespace ds::bench
