// Token-major routed experts of a few tokens with MXFP4 weights (kernels/moe_token.h): the MXFP4 twin
// of moe_token.cu's two launches (no shared expert: K3's latent experts and its full-width shared
// expert differ in shape). Each lane takes whole 32-input scale blocks: one 16-byte load of codes
// (skipping L1) and one scale byte per block, several blocks of every row issued before any is
// used; the codes are decoded in registers (mxfp4.cuh), summed against x, and the block's partial
// sum is multiplied by its scale once. Both launched with PDL (pdl.cuh).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/expert_act.cuh"
#include "kernels/cuda/moe_token_launch.h"
#include "kernels/cuda/moe_token_out.cuh"
#include "kernels/cuda/mxfp4.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kGuWarps = 4, kGuU = 2;                // gate/up: one row per warp, blocks per lane per pass
constexpr int kDnWarps = 4, kDnTerms = 4, kDnU = 1;  // down: terms and blocks per lane per pass

__device__ __forceinline__ uint4 load_codes(const uint8_t* p) {
  uint4 u;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p));
  return u;
}

// Σ_{i<32} code_i · x[i] over one block (32 codes in 4 words), x f32 [32] (16-byte aligned).
__device__ __forceinline__ float block_dot(const uint4& c, const float* x) {
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    float xv[8];
    load8(x + 8 * q, xv);
#pragma unroll
    for (int i = 0; i < 8; ++i) s += e2m1_value(mxfp4_code(w[q], i)) * xv[i];
  }
  return s;
}

// Matrix `which` (0 gate, 1 up, 2 down) of expert e: codes and scales.
struct MxMat {
  const uint8_t* codes;
  const uint8_t* scales;
};
__device__ __forceinline__ MxMat mx_matrix(const TokenGluLaunch& l, int64_t e, int which) {
  return {static_cast<const uint8_t*>(l.ptrs[which * l.E + e]),
          static_cast<const uint8_t*>(l.scales[which * l.E + e])};
}

__global__ void __launch_bounds__(kGuWarps * 32) mx_gate_up_kernel(TokenGluLaunch l) {
  pdl_wait();  // the expert ids and x come from the kernels before; then the next kernel may launch
  pdl_trigger();
  const int64_t t = blockIdx.x / l.k;
  const int j = int(blockIdx.x % l.k);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i = int64_t(blockIdx.y) * kGuWarps + warp;
  if (i >= l.I) return;
  const int64_t e = l.expert[t * l.k + j], nb = l.D / 32;
  const MxMat g = mx_matrix(l, e, 0), u = mx_matrix(l, e, 1);
  const uint8_t *gc = g.codes + i * (l.D / 2), *gs = g.scales + i * nb;
  const uint8_t *uc = u.codes + i * (l.D / 2), *us = u.scales + i * nb;
  const float* x = l.x + t * l.x_stride;
  float ag = 0.0f, au = 0.0f;
  for (int64_t b0 = lane; b0 < nb; b0 += 32 * kGuU) {
    uint4 cg[kGuU], cu[kGuU];
    uint32_t sg[kGuU], su[kGuU];
#pragma unroll
    for (int v = 0; v < kGuU; ++v) {
      const int64_t b = b0 + 32 * v;
      if (b < nb) {
        cg[v] = load_codes(gc + 16 * b), cu[v] = load_codes(uc + 16 * b);
        sg[v] = gs[b], su[v] = us[b];
      }
    }
#pragma unroll
    for (int v = 0; v < kGuU; ++v) {
      const int64_t b = b0 + 32 * v;
      if (b >= nb) break;
      ag += block_dot(cg[v], x + 32 * b) * e8m0_value(sg[v]);
      au += block_dot(cu[v], x + 32 * b) * e8m0_value(su[v]);
    }
  }
  const float sg = warp_sum(ag), su = warp_sum(au);
  if (lane == 0) {
    float* h = l.h + (t * l.k + j) * l.h_stride;
    h[i] = l.situ ? situ_glu(sg, su, l.beta, l.linear_beta) : sg / (1.0f + expf(-sg)) * su;
  }
}

__global__ void __launch_bounds__(kDnWarps * 32) mx_down_kernel(TokenGluLaunch l) {
  pdl_wait();
  pdl_trigger();
  const int k = int(l.k);
  const int64_t t = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t d = int64_t(blockIdx.y) * kDnWarps + warp;
  if (d >= l.D) return;
  const int64_t nb = l.I / 32;
  // Lane j < k looks up term j's down matrix and mixture weight once; the groups take them by shuffle.
  MxMat my{nullptr, nullptr};
  float my_wt = 0.0f;
  if (lane < k) {
    my = mx_matrix(l, l.expert[t * k + lane], 2);
    my_wt = l.weight[t * k + lane];
  }
  float acc = 0.0f;
  for (int j0 = 0; j0 < k; j0 += kDnTerms) {
    const uint8_t* wc[kDnTerms];
    const uint8_t* ws[kDnTerms];
    float wt[kDnTerms];
#pragma unroll
    for (int s = 0; s < kDnTerms; ++s) {
      const int j = min(j0 + s, k - 1);
      const auto c = __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(my.codes), j);
      const auto sc = __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(my.scales), j);
      wc[s] = reinterpret_cast<const uint8_t*>(c) + d * (l.I / 2);
      ws[s] = reinterpret_cast<const uint8_t*>(sc) + d * nb;
      const float w = __shfl_sync(0xffffffffu, my_wt, j);
      wt[s] = j0 + s >= k ? 0.0f : w;
    }
    for (int64_t b0 = lane; b0 < nb; b0 += 32 * kDnU) {
      uint4 c[kDnTerms][kDnU];
      uint32_t sc[kDnTerms][kDnU];
#pragma unroll
      for (int v = 0; v < kDnU; ++v)
#pragma unroll
        for (int s = 0; s < kDnTerms; ++s) {
          const int64_t b = b0 + 32 * v;
          if (b < nb && j0 + s < k) c[s][v] = load_codes(wc[s] + 16 * b), sc[s][v] = ws[s][b];
        }
#pragma unroll
      for (int s = 0; s < kDnTerms; ++s) {
        if (j0 + s >= k) break;
        const float* h = l.h + (t * k + j0 + s) * l.h_stride;
        float part = 0.0f;
#pragma unroll
        for (int v = 0; v < kDnU; ++v) {
          const int64_t b = b0 + 32 * v;
          if (b >= nb) break;
          part += block_dot(c[s][v], h + 32 * b) * e8m0_value(sc[s][v]);
        }
        acc += wt[s] * part;
      }
    }
  }
  token_store_row(l, t, d, acc);
}

}  // namespace

void launch_moe_token_glu_mxfp4(const TokenGluLaunch& l) {
  require(
      l.T >= 1 && l.k >= 1 && l.k < 32 && l.D % 32 == 0 && l.I % 32 == 0 && l.x_stride % 4 == 0 &&
          l.h_stride % 4 == 0 && l.scales != nullptr && l.shared_gate == nullptr && l.T * l.k <= 0x7fffffff &&
          (l.I + kGuWarps - 1) / kGuWarps <= 65535 && (l.D + kDnWarps - 1) / kDnWarps <= 65535,
      "moe_token_glu (CUDA, MXFP4): D and I multiples of 32, row strides multiples of 4, no shared expert");
  const dim3 gu(unsigned(l.T * l.k), unsigned((l.I + kGuWarps - 1) / kGuWarps));
  const dim3 dn(unsigned(l.T), unsigned((l.D + kDnWarps - 1) / kDnWarps));
  launch_pdl(mx_gate_up_kernel, gu, dim3(kGuWarps * 32), 0, l);
  launch_pdl(mx_down_kernel, dn, dim3(kDnWarps * 32), 0, l);
}

}  // namespace ds::cuda
