// Kernels of the tensor-core MLA prefill (mla_dense.cpp): the latents of one sequence gathered from
// their pages as bf16 K = [c ; k_pe] rows and Vt = cᵀ, the queries packed per head as bf16
// [q̂ ; q_pe] rows, and the causal softmax of one block of score rows (f32 in, bf16 probabilities out;
// rows of up to 32k columns held in registers, so that the scores are read once).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mla_dense_launch.h"

namespace ds::cuda {
namespace {

constexpr int kGatherRows = 32;
constexpr int kMaxR = 512;

// CTA: kGatherRows positions; every entry to K, the c part through shared memory to Vt (when wanted).
__global__ void __launch_bounds__(256) gather_kernel(MlaDenseGather g) {
  __shared__ __nv_bfloat16 cs[kGatherRows][kMaxR + 2];  // +2: the transposed reads hit distinct banks
  const int E = g.R + g.dr;
  const int64_t j0 = int64_t(blockIdx.x) * kGatherRows, ldk = g.ldk > 0 ? g.ldk : E;
  for (int idx = threadIdx.x; idx < kGatherRows * E; idx += blockDim.x) {
    const int p = idx / E, k = idx % E;
    const int64_t j = j0 + p;
    if (j >= g.L) continue;
    const int32_t page = g.page_table[j / g.page_tokens];
    const float v = g.pool[(int64_t(page) * g.page_tokens + j % g.page_tokens) * E + k];
    const __nv_bfloat16 b = __float2bfloat16(v);
    g.K[j * ldk + k] = b;
    if (k < g.R) cs[p][k] = b;
  }
  if (g.Vt == nullptr) return;  // uniform over the CTA
  __syncthreads();
  for (int idx = threadIdx.x; idx < g.R * kGatherRows; idx += blockDim.x) {
    const int r = idx / kGatherRows, p = idx % kGatherRows;
    const int64_t j = j0 + p;
    if (j < g.L) g.Vt[int64_t(r) * g.ldv + j] = cs[p][r];
  }
}

// Q [H, T, E] bf16: row (h, t) = [q̂_h(t) ; q_pe_h(t)].
__global__ void pack_q_kernel(MlaDenseQ q) {
  const int E = q.R + q.dr;
  const int64_t n = int64_t(q.H) * q.T * E;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int e = int(i % E);
    const int64_t ht = i / E, t = ht % q.T;
    const int h = int(ht / q.T);
    const float v =
        e < q.R ? q.q_hat[t * q.qhs + int64_t(h) * q.R + e] : q.q_pe[t * q.qps + h * q.qph + e - q.R];
    q.Q[i] = __float2bfloat16(v);
  }
}

// Online (max, sum of exp) pair merge, base-2 exponents.
__device__ __forceinline__ void merge_ml(float& m, float& l, float om, float ol) {
  const float M = fmaxf(m, om);
  l = (m == -FLT_MAX ? 0.0f : l * exp2f(m - M)) + (om == -FLT_MAX ? 0.0f : ol * exp2f(om - M));
  m = M;
}

// CTA (row r, head hh): P[c] = softmax_c(scale · S[c]) over c <= pos0 + r, zero for the later columns < Lb.
__global__ void __launch_bounds__(256) softmax_kernel(MlaDenseSoftmax s) {
  __shared__ float red_m[8], red_l[8];
  const int64_t row = int64_t(blockIdx.y) * s.rows + blockIdx.x;
  const float* x = s.S + row * s.ld;
  __nv_bfloat16* p = s.P + row * s.ld;
  const int64_t n = s.pos0 + blockIdx.x + 1;  // keys 0 .. pos0 + r
  const float k2 = s.scale * 1.4426950408889634f;
  float m = -FLT_MAX, l = 0.0f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float v = x[c] * k2;
    if (v > m) {
      l = (m == -FLT_MAX ? 0.0f : l * exp2f(m - v)) + 1.0f;
      m = v;
    } else {
      l += exp2f(v - m);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2)
    merge_ml(m, l, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, l, o));
  if (threadIdx.x % 32 == 0) red_m[threadIdx.x / 32] = m, red_l[threadIdx.x / 32] = l;
  __syncthreads();
  m = red_m[0], l = red_l[0];
  for (int w = 1; w < 8; ++w) merge_ml(m, l, red_m[w], red_l[w]);
  const float inv = 1.0f / l;
  for (int64_t c = threadIdx.x; c < s.cols; c += blockDim.x)
    p[c] = __float2bfloat16(c < n ? exp2f(x[c] * k2 - m) * inv : 0.0f);
}

// The same softmax with the row kept in registers (rows of at most kThreads·kPer columns): S is read
// once instead of twice. Each thread owns columns 4·(tid + kThreads·i) .. + 4, loaded as float4.
template <int kThreads, int kPer>
__global__ void __launch_bounds__(kThreads) softmax_regs_kernel(MlaDenseSoftmax s) {
  constexpr int kVec = kPer / 4, kWarps = kThreads / 32;
  __shared__ float red[kWarps];
  const int64_t row = int64_t(blockIdx.y) * s.rows + blockIdx.x;
  const float* x = s.S + row * s.ld;
  __nv_bfloat16* p = s.P + row * s.ld;
  const int64_t n = s.pos0 + blockIdx.x + 1;  // keys 0 .. pos0 + r
  const float k2 = s.scale * 1.4426950408889634f;
  float v[kVec][4];
  float m = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const int64_t c = 4 * (threadIdx.x + int64_t(kThreads) * i);
    float4 q = make_float4(-FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX);
    if (c + 3 < n) {
      q = *reinterpret_cast<const float4*>(x + c);
      q.x *= k2, q.y *= k2, q.z *= k2, q.w *= k2;
    } else if (c < n) {
      q.x = x[c] * k2;
      if (c + 1 < n) q.y = x[c + 1] * k2;
      if (c + 2 < n) q.z = x[c + 2] * k2;
    }
    v[i][0] = q.x, v[i][1] = q.y, v[i][2] = q.z, v[i][3] = q.w;
    m = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, red[w]);
  float l = 0.0f;
#pragma unroll
  for (int i = 0; i < kVec; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[i][j] = v[i][j] == -FLT_MAX ? 0.0f : exp2f(v[i][j] - m);
      l += v[i][j];
    }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);
  __syncthreads();  // every thread has read red[] as maxima
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) l += red[w];
  const float inv = 1.0f / l;
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const int64_t c = 4 * (threadIdx.x + int64_t(kThreads) * i);
    if (c + 3 < s.cols) {
      const __nv_bfloat162 lo = __floats2bfloat162_rn(v[i][0] * inv, v[i][1] * inv);
      const __nv_bfloat162 hi = __floats2bfloat162_rn(v[i][2] * inv, v[i][3] * inv);
      uint2 u;
      u.x = *reinterpret_cast<const uint32_t*>(&lo), u.y = *reinterpret_cast<const uint32_t*>(&hi);
      *reinterpret_cast<uint2*>(p + c) = u;
    } else {
      for (int j = 0; j < 4 && c + j < s.cols; ++j) p[c + j] = __float2bfloat16(v[i][j] * inv);
    }
  }
}

}  // namespace

void launch_mla_dense_gather(const MlaDenseGather& g) {
  require(g.R <= kMaxR && g.L > 0, "mla dense (CUDA): latent width above 512");
  gather_kernel<<<unsigned((g.L + kGatherRows - 1) / kGatherRows), 256>>>(g);
  check_launch("mla dense gather kernel");
}

void launch_mla_dense_pack_q(const MlaDenseQ& q) {
  const int64_t n = int64_t(q.H) * q.T * (q.R + q.dr);
  const int64_t blocks = (n + 255) / 256;
  pack_q_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256>>>(q);
  check_launch("mla dense pack kernel");
}

void launch_mla_dense_softmax(const MlaDenseSoftmax& s, int heads) {
  const dim3 grid(unsigned(s.rows), unsigned(heads));
  // Rows that fit in registers (16-byte aligned rows): one read of S. Longer rows: two passes.
  const bool vec = s.ld % 4 == 0 && reinterpret_cast<uintptr_t>(s.S) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(s.P) % 8 == 0;
  if (vec && s.cols <= 256 * 16)
    softmax_regs_kernel<256, 16><<<grid, 256>>>(s);
  else if (vec && s.cols <= 512 * 32)
    softmax_regs_kernel<512, 32><<<grid, 512>>>(s);
  else if (vec && s.cols <= 1024 * 32)
    softmax_regs_kernel<1024, 32><<<grid, 1024>>>(s);
  else
    softmax_kernel<<<grid, 256>>>(s);
  check_launch("mla dense softmax kernel");
}

}  // namespace ds::cuda
