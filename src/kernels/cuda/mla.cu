// MLA over the paged latent pool (kernels/mla_attention.h): the latent write, and the absorbed
// attention as a simple flash-style kernel: one CTA of 128 threads per (token, head) walks the
// token's context in tiles of 128 positions — each thread scores one position (dot products over
// R + dr), an online softmax over the tiles, and the context vector accumulated per latent column
// (thread r owns columns r, r + 128, ...). f32 throughout.
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxCols = 1024 / kThreads;  // R <= 1024

__device__ __forceinline__ const float* entry(const MlaLaunch& m, int32_t seq, int64_t t) {
  const int32_t page = m.page_table[m.page_offset[seq] + t / m.page_tokens];
  return m.pool + (int64_t(page) * m.page_tokens + t % m.page_tokens) * (m.R + m.dr);
}

// Launched with PDL (pdl.cuh): waits for the kernel before, then lets the next one launch.
__global__ void mla_write_kernel(MlaLaunch m, const float* c, int64_t cs, const float* kpe, int64_t ks) {
  pdl_wait();
  pdl_trigger();
  const int64_t i = blockIdx.x;
  float* e = const_cast<float*>(entry(m, m.tok_seq[i], m.tok_pos[i]));
  for (int64_t d = threadIdx.x; d < m.R + m.dr; d += blockDim.x)
    e[d] = d < m.R ? c[i * cs + d] : kpe[i * ks + d - m.R];
}

__global__ void __launch_bounds__(kThreads)
    mla_attention_kernel(MlaLaunch m, const float* q_hat, int64_t qhs, const float* q_pe, int64_t qps,
                         int64_t qp_head, float scale, float* ctx, int64_t cs) {
  extern __shared__ float q_s[];  // [R + dr]
  __shared__ float p_s[kThreads];
  __shared__ float red[4];
  const int64_t i = blockIdx.x, h = blockIdx.y;
  const int tid = threadIdx.x;
  const int64_t R = m.R, dr = m.dr;
  const int32_t seq = m.tok_seq[i];
  const int64_t n_ctx = int64_t(m.tok_pos[i]) + 1;
  for (int64_t d = tid; d < R + dr; d += kThreads)
    q_s[d] = d < R ? q_hat[i * qhs + h * R + d] : q_pe[i * qps + h * qp_head + d - R];
  __syncthreads();
  float acc[kMaxCols];
#pragma unroll
  for (int c = 0; c < kMaxCols; ++c) acc[c] = 0.0f;
  float m_run = -FLT_MAX, l_run = 0.0f;
  for (int64_t t0 = 0; t0 < n_ctx; t0 += kThreads) {
    const int64_t t = t0 + tid;
    float score = -FLT_MAX;
    if (t < n_ctx) {
      const float* e = entry(m, seq, t);
      float dot = 0.0f;
      for (int64_t d = 0; d < R + dr; ++d) dot += q_s[d] * e[d];
      score = dot * scale;
    }
    const float m_new = fmaxf(m_run, block_reduce<kThreads, true>(score, red));
    const float p = t < n_ctx ? expf(score - m_new) : 0.0f;
    p_s[tid] = p;
    const float tile_sum = block_reduce<kThreads>(p, red);  // barrier: p_s visible
    const float corr = expf(m_run - m_new);
    l_run = l_run * corr + tile_sum;
    m_run = m_new;
    const int64_t n_tile = n_ctx - t0 < kThreads ? n_ctx - t0 : kThreads;
#pragma unroll
    for (int c = 0; c < kMaxCols; ++c) acc[c] *= corr;
    for (int64_t u = 0; u < n_tile; ++u) {
      const float* e = entry(m, seq, t0 + u);
      const float pu = p_s[u];
#pragma unroll
      for (int c = 0; c < kMaxCols; ++c) {
        const int64_t col = tid + int64_t(c) * kThreads;
        if (col < R) acc[c] += pu * e[col];
      }
    }
    __syncthreads();  // p_s is rewritten by the next tile
  }
  const float inv = 1.0f / l_run;
#pragma unroll
  for (int c = 0; c < kMaxCols; ++c) {
    const int64_t col = tid + int64_t(c) * kThreads;
    if (col < R) ctx[i * cs + h * R + col] = acc[c] * inv;
  }
}

}  // namespace

void launch_mla_write(const MlaLaunch& m, const float* c, int64_t c_stride, const float* k_pe,
                      int64_t k_pe_stride) {
  if (m.T == 0) return;
  launch_pdl(mla_write_kernel, dim3(unsigned(m.T)), dim3(128), 0, m, c, c_stride, k_pe, k_pe_stride);
  check_launch("mla write kernel");
}

void launch_mla_attention(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                          const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                          float* ctx, int64_t ctx_stride) {
  if (m.T == 0) return;
  const dim3 grid{unsigned(m.T), unsigned(H)};
  const size_t shared = size_t(m.R + m.dr) * sizeof(float);
  mla_attention_kernel<<<grid, kThreads, shared>>>(m, q_hat, q_hat_stride, q_pe, q_pe_stride,
                                                   q_pe_head_stride, scale, ctx, ctx_stride);
  check_launch("mla attention kernel");
}

}  // namespace ds::cuda
