// Exact KDA prefill (KdaPrefillArgs::exact; K = V = 128, f32 activations): the per-token f32
// recurrence of the CPU oracle. One CTA of 128 threads per (sequence, head); thread j owns column j
// of the state S [K, V] in registers. Per token: q, k L2-normalised (block sums), the decay gate
// per key channel, then S ← Diag(α) S; e = v − Sᵀk; S ← S + β k eᵀ; o = Sᵀ(scale · q).
// Checkpoint slots receive S after their token counts; the final state goes to the final slot.
#include <cuda_runtime.h>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"

namespace ds::cuda {
namespace {

constexpr int kD = 128;

__global__ void __launch_bounds__(kD) kda_exact_kernel(KdaExactLaunch p) {
  __shared__ float q_s[kD], k_s[kD], a_s[kD];
  __shared__ float red[4];
  const int n = blockIdx.x, h = blockIdx.y, j = threadIdx.x;
  const int64_t S_off = int64_t(h) * kD * kD;
  float s[kD];  // column j: s[kk] = S[kk][j]
  const int init = p.initial_slot[n];
  if (init >= 0) {
    const float* S = p.pool + int64_t(init) * p.slot_stride + S_off;
#pragma unroll
    for (int kk = 0; kk < kD; ++kk) s[kk] = S[kk * kD + j];
  } else {
#pragma unroll
    for (int kk = 0; kk < kD; ++kk) s[kk] = 0.0f;
  }
  const int64_t r0 = p.cu_seqlens[n], len = p.cu_seqlens[n + 1] - r0;
  int c = p.ck_offset[n];
  const int c_end = p.ck_offset[n + 1];
  const int ch = h * kD + j;
  const float a = expf(p.a_log[h]);
  for (int64_t t = 0; t < len; ++t) {
    const int64_t r = r0 + t;
    const float qv = p.q[r * p.q_stride + ch], kv = p.k[r * p.k_stride + ch];
    const float vv = p.v[r * p.v_stride + ch];
    const float z = p.f[r * p.f_stride + ch] + p.dt_bias[ch];
    const float g =
        p.safe_gate ? p.lower_bound / (1.0f + expf(-a * z)) : -a * (z > 20.0f ? z : log1pf(expf(z)));
    const float beta = 1.0f / (1.0f + expf(-p.b[r * p.b_stride + h]));
    const float inv_q = rsqrtf(block_reduce<kD>(qv * qv, red) + 1e-6f);
    const float inv_k = rsqrtf(block_reduce<kD>(kv * kv, red) + 1e-6f);
    q_s[j] = qv * inv_q * p.scale;
    k_s[j] = kv * inv_k;
    a_s[j] = expf(g);
    __syncthreads();
    float kS = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD; ++kk) {
      s[kk] *= a_s[kk];
      kS += k_s[kk] * s[kk];
    }
    const float e = beta * (vv - kS);
    float o = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD; ++kk) {
      s[kk] += k_s[kk] * e;
      o += s[kk] * q_s[kk];
    }
    p.o[r * p.o_stride + ch] = o;
    for (; c < c_end && p.ck_after[c] == t + 1; ++c) {
      float* dst = p.pool + int64_t(p.ck_slot[c]) * p.slot_stride + S_off;
#pragma unroll
      for (int kk = 0; kk < kD; ++kk) dst[kk * kD + j] = s[kk];
    }
    __syncthreads();  // q_s, k_s, a_s are rewritten by the next token
  }
  float* S = p.pool + int64_t(p.final_slot[n]) * p.slot_stride + S_off;
#pragma unroll
  for (int kk = 0; kk < kD; ++kk) S[kk * kD + j] = s[kk];
}

}  // namespace

void launch_kda_exact(const KdaExactLaunch& l) {
  if (l.N == 0) return;
  kda_exact_kernel<<<dim3{unsigned(l.N), unsigned(l.H)}, kD>>>(l);
  check_launch("kda exact prefill kernel");
}

}  // namespace ds::cuda
