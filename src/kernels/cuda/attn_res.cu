// Block AttnRes mixing (kernels/attn_res.h): one CTA of 256 threads per token (and per query for
// phase 1); the per-source RMS and dot products are block reductions in f32, the softmax over the
// (at most 32) sources is computed by every thread from shared memory.
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"

namespace ds::cuda {
namespace {

constexpr int kThreads = 256;

// rsqrt(mean(v²) + eps) · (v · q) of one row, every thread gets it.
__device__ float row_logit(const float* v, const float* q, int64_t D, float eps, float* red) {
  float ss = 0.0f, dot = 0.0f;
  for (int64_t c = threadIdx.x; c < D; c += kThreads) ss += v[c] * v[c], dot += v[c] * q[c];
  const float tss = block_reduce<kThreads>(ss, red);
  const float tdot = block_reduce<kThreads>(dot, red);
  return tdot * rsqrtf(tss / float(D) + eps);
}

// Softmax weights over the sources for token t (unnormalised e^(logit - max) in w, their sum and
// the max returned through the pointers); every thread holds them.
__device__ void source_weights(const AttnResSources& src, int64_t t, int64_t D, const float* query, float eps,
                               float* red, float* l_s, float* w, float* mx_out, float* sum_out) {
  for (int i = 0; i < src.n; ++i) {
    const float l = row_logit(src.ptr[i] + t * D, query, D, eps, red);
    if (threadIdx.x == 0) l_s[i] = l;
  }
  __syncthreads();
  float mx = -FLT_MAX;
  for (int i = 0; i < src.n; ++i) mx = fmaxf(mx, l_s[i]);
  float sum = 0.0f;
  for (int i = 0; i < src.n; ++i) sum += (w[i] = expf(l_s[i] - mx));
  *mx_out = mx, *sum_out = sum;
}

// out[t] = Σ_i scale · w_i · V_i[t] over the CTA's columns.
__device__ void weighted_row(const AttnResSources& src, int64_t t, int64_t D, const float* w, float scale,
                             float* out) {
  for (int64_t c = threadIdx.x; c < D; c += kThreads) {
    float acc = 0.0f;
    for (int i = 0; i < src.n; ++i) acc += (w[i] * scale) * src.ptr[i][t * D + c];
    out[c] = acc;
  }
}

__global__ void __launch_bounds__(kThreads)
    mix_kernel(AttnResSources src, int64_t T, int64_t D, const float* query, float eps, float* out) {
  __shared__ float red[kThreads / 32];
  __shared__ float l_s[kMaxAttnResSources];
  float w[kMaxAttnResSources], mx, sum;
  const int64_t t = blockIdx.x;
  source_weights(src, t, D, query, eps, red, l_s, w, &mx, &sum);
  weighted_row(src, t, D, w, 1.0f / sum, out + t * D);
}

__global__ void __launch_bounds__(kThreads)
    scores_kernel(AttnResSources blk, int64_t T, int64_t D, const float* queries, float eps, float* m,
                  float* s, float* o) {
  __shared__ float red[kThreads / 32];
  __shared__ float l_s[kMaxAttnResSources];
  float w[kMaxAttnResSources], mx, sum;
  const int64_t t = blockIdx.x, j = blockIdx.y;
  source_weights(blk, t, D, queries + j * D, eps, red, l_s, w, &mx, &sum);
  weighted_row(blk, t, D, w, 1.0f, o + (j * T + t) * D);
  if (threadIdx.x == 0) m[j * T + t] = mx, s[j * T + t] = sum;
}

__global__ void __launch_bounds__(kThreads)
    merge_kernel(int64_t j, int64_t T, int64_t D, const float* m, const float* s, const float* o,
                 const float* partial, const float* query, float eps, float* out) {
  __shared__ float red[kThreads / 32];
  const int64_t t = blockIdx.x, idx = j * T + t;
  const float* oj = o + idx * D;
  float* h = out + t * D;
  if (partial == nullptr) {
    for (int64_t c = threadIdx.x; c < D; c += kThreads) h[c] = oj[c] / s[idx];
    return;
  }
  const float* p = partial + t * D;
  const float l = row_logit(p, query, D, eps, red);
  const float mx = fmaxf(m[idx], l);
  const float a = expf(m[idx] - mx), b = expf(l - mx);
  const float inv = 1.0f / (a * s[idx] + b);
  for (int64_t c = threadIdx.x; c < D; c += kThreads) h[c] = (a * oj[c] + b * p[c]) * inv;
}

}  // namespace

void launch_attn_res_mix(const AttnResSources& src, int64_t T, int64_t D, const float* query, float eps,
                         float* out) {
  if (T == 0) return;
  mix_kernel<<<unsigned(T), kThreads>>>(src, T, D, query, eps, out);
  check_launch("attn_res mix kernel");
}

void launch_attn_res_block_scores(const AttnResSources& blocks, int64_t T, int64_t D, const float* queries,
                                  int64_t Q, float eps, float* m, float* s, float* o) {
  if (T == 0 || Q == 0) return;
  scores_kernel<<<dim3{unsigned(T), unsigned(Q)}, kThreads>>>(blocks, T, D, queries, eps, m, s, o);
  check_launch("attn_res block scores kernel");
}

void launch_attn_res_merge(int64_t j, int64_t T, int64_t D, const float* m, const float* s, const float* o,
                           const float* partial, const float* query, float eps, float* out) {
  if (T == 0) return;
  merge_kernel<<<unsigned(T), kThreads>>>(j, T, D, m, s, o, partial, query, eps, out);
  check_launch("attn_res merge kernel");
}

}  // namespace ds::cuda
