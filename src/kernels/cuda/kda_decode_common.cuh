// Internal to src/kernels/cuda: the per-channel and per-column arithmetic that the KDA decode's column
// form (kda_decode_cols.cu) and cluster form (kda_decode_cluster.cu) share (K = V = 128, conv size 4),
// and their launch. Both lay a warp's state out the same way: lane (rs = lane / 8, cg = lane % 8)
// holds rows 4i + rs of the warp's rows and four value columns 4cg .. 4cg+3 as one float4.
// With S' = Diag(α) S and raw (unnormalised) conv outputs q̃, k̃ (q = q̃/|q̃|, k = k̃/|k̃|):
//   kᵀS' = k̃ᵀS' / |k̃|,  e = v − kᵀS',  o = scale · (qᵀS' + β (q·k) e),  S ← S' + k̃ (β e / |k̃|).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/act_io.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {

constexpr int kKdaD = 128;                    // K = V
constexpr int kKdaW = 4, kKdaWl = kKdaW - 1;  // conv taps, window length

__device__ __forceinline__ float4 fma4(float4 a, float s, float4 c) {
  return make_float4(fmaf(a.x, s, c.x), fmaf(a.y, s, c.y), fmaf(a.z, s, c.z), fmaf(a.w, s, c.w));
}

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// Channel c of sequence bi's projection pr (0: q, 1: k, 2: v) before the conv.
template <class T>
__device__ __forceinline__ float load_projection(const KdaDecodeLaunch& p, int pr, int bi, int c) {
  const void* x = pr == 0 ? p.q : pr == 1 ? p.k : p.v;
  const int64_t stride = pr == 0 ? p.q_stride : pr == 1 ? p.k_stride : p.v_stride;
  return load_act(static_cast<const T*>(x), int64_t(bi) * stride + c);
}

// One channel's short-conv step: silu(Σ taps · [window ; x]).
__device__ __forceinline__ float conv_silu(const float (&tap)[kKdaW], const float (&win)[kKdaWl], float x) {
  float acc = tap[kKdaWl] * x;
#pragma unroll
  for (int t = 0; t < kKdaWl; ++t) acc = fmaf(tap[t], win[t], acc);
  return acc / (1.0f + expf(-acc));
}

// The window after the step, written at wp: the oldest entry dropped, x appended.
__device__ __forceinline__ void conv_shift(float* wp, const float (&win)[kKdaWl], float x) {
#pragma unroll
  for (int t = 0; t + 1 < kKdaWl; ++t) wp[t] = win[t + 1];
  wp[kKdaWl - 1] = x;
}

// Decay α = exp(g) of one key channel, z = f + dt_bias, a = exp(a_log): g = lower_bound · sigmoid(a z)
// (safe gate) or −a · softplus(z).
__device__ __forceinline__ float decay_alpha(const KdaDecodeLaunch& p, float z, float a_log) {
  const float a = expf(a_log);
  const float g =
      p.safe_gate ? p.lower_bound / (1.0f + expf(-a * z)) : -a * (z > 20.0f ? z : log1pf(expf(z)));
  return expf(g);
}

struct QkNorms {
  float inv_q, inv_k;  // 1 / |q̃|, 1 / |k̃|
  float qk;            // q · k of the normalised vectors
};

// The L2 norms of the head's q̃ and k̃ (thread j of the 128 holds channel j) and their product;
// `red` is [3][4] shared floats. One barrier, which also publishes the shared writes made before it.
__device__ __forceinline__ QkNorms qk_norms(float q, float k, float (*red)[4]) {
  const float qq = warp_sum(q * q), kk = warp_sum(k * k), qk = warp_sum(q * k);
  const int w = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) red[0][w] = qq, red[1][w] = kk, red[2][w] = qk;
  __syncthreads();
  QkNorms n;
  n.inv_q = rsqrtf(red[0][0] + red[0][1] + red[0][2] + red[0][3] + 1e-6f);
  n.inv_k = rsqrtf(red[1][0] + red[1][1] + red[1][2] + red[1][3] + 1e-6f);
  n.qk = (red[2][0] + red[2][1] + red[2][2] + red[2][3]) * n.inv_q * n.inv_k;
  return n;
}

// One state row of the lane's four columns: s ← α s (kept), and its terms of k̃ᵀS' and q̃ᵀS'.
// rc is the row's record {α, k̃, q̃, 0}.
__device__ __forceinline__ void decay_and_project(float4& s, float4 rc, float4& ka, float4& qa) {
  s.x *= rc.x, s.y *= rc.x, s.z *= rc.x, s.w *= rc.x;
  ka = fma4(s, rc.y, ka);
  qa = fma4(s, rc.z, qa);
}

// Sums a and b over the four row groups of a warp (the lanes that share lane % 8).
__device__ __forceinline__ void row_group_sum(float4& a, float4& b) {
#pragma unroll
  for (int o = 8; o < 32; o *= 2) {
    a.x += __shfl_xor_sync(0xffffffffu, a.x, o), a.y += __shfl_xor_sync(0xffffffffu, a.y, o);
    a.z += __shfl_xor_sync(0xffffffffu, a.z, o), a.w += __shfl_xor_sync(0xffffffffu, a.w, o);
    b.x += __shfl_xor_sync(0xffffffffu, b.x, o), b.y += __shfl_xor_sync(0xffffffffu, b.y, o);
    b.z += __shfl_xor_sync(0xffffffffu, b.z, o), b.w += __shfl_xor_sync(0xffffffffu, b.w, o);
  }
}

struct DeltaColumns {
  float4 o;  // the read-out before the gated norm
  float4 u;  // the update's column factors: S ← S' + k̃ uᵀ
};

// Four columns' read-out and update factors from v and the whole-column sums ka = k̃ᵀS', qa = q̃ᵀS'.
__device__ __forceinline__ DeltaColumns delta_columns(float4 v, float4 ka, float4 qa, QkNorms n, float beta,
                                                      float scale) {
  const float4 e =
      make_float4(v.x - ka.x * n.inv_k, v.y - ka.y * n.inv_k, v.z - ka.z * n.inv_k, v.w - ka.w * n.inv_k);
  const float bq = beta * n.qk, bk = beta * n.inv_k;
  DeltaColumns d;
  d.o = make_float4(scale * (qa.x * n.inv_q + bq * e.x), scale * (qa.y * n.inv_q + bq * e.y),
                    scale * (qa.z * n.inv_q + bq * e.z), scale * (qa.w * n.inv_q + bq * e.w));
  d.u = make_float4(bk * e.x, bk * e.y, bk * e.z, bk * e.w);
  return d;
}

__device__ __forceinline__ float sum_squares(float4 a) {
  return a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
}

// Launches a decode kernel of 128-thread CTAs: as a programmatic dependent launch when `pdl` and the
// stream is not the legacy default stream (which keeps plain launches).
template <class... KArgs, class... Args>
void launch_kda_decode_kernel(void (*kernel)(KArgs...), dim3 grid, const KdaDecodeLaunch& l, bool pdl,
                              const char* what, Args... args) {
  const cudaStream_t stream = static_cast<cudaStream_t>(l.stream);
  if (pdl && stream != nullptr) {
    if (pdl_ablated(reinterpret_cast<const void*>(kernel), grid, dim3{128}, stream)) return;
    launch_pdl_on(stream, what, kernel, grid, dim3{128}, 0, l, args...);
  } else {
    kernel<<<grid, 128, 0, stream>>>(l, args...);
  }
  check_launch(what);
}

}  // namespace ds::cuda
