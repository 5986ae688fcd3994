// MLA absorbed attention over the paged latents with every head of a token in one CTA (the latent
// rows are read once per token instead of once per head) and the context split over S CTAs per
// token (flash-decoding): CTA (i, s) walks tiles s, s + S, ... of 32 positions, keeping per head an
// online softmax (m, l) and the unnormalised context O [H, R] in registers; a second kernel merges
// the S partial results. S = 1 (long prompts: enough tokens to fill the GPU) writes ctx directly.
// Few tokens (decode): the heads are also split into G groups (CTA (i, s, g)), so that a step of one
// token still spreads over the GPU with a small q tile per CTA (the latents are then read G times).
// f32 throughout; H <= 32, R <= 512, (R + dr) % 4 == 0 (else the per-head kernel of mla.cu runs).
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 32;  // positions per tile
constexpr int kMaxHeads = 32;
constexpr int kHeadsPerThread = kMaxHeads / (kThreads / 128);  // 16: thread owns heads t/128 + 2q
constexpr int kColsPerThread = 4;                              // cols t%128 + 128j, R <= 512

__device__ __forceinline__ const float* entry(const MlaLaunch& m, int32_t seq, int64_t t) {
  const int32_t page = m.page_table[m.page_offset[seq] + t / m.page_tokens];
  return m.pool + (int64_t(page) * m.page_tokens + t % m.page_tokens) * (m.R + m.dr);
}

__global__ void __launch_bounds__(kThreads) mla_split_kernel(MlaSplitArgs a) {
  extern __shared__ float4 sm4[];
  float* sm = reinterpret_cast<float*>(sm4);
  // Rows of E = R + dr floats (E % 4 == 0); latent rows padded to E + 4 so that the lanes' 16-byte
  // loads of 8 consecutive positions fall in distinct banks.
  const int H = a.H, R = int(a.m.R), E = int(a.m.R + a.m.dr), LD = E + 4;
  float* q_s = sm;                // [H, E], pre-scaled
  float* e_s = q_s + H * E;       // [kTile, LD]
  float* p_s = e_s + kTile * LD;  // [H, kTile]: probabilities of the tile
  float* m_s = p_s + H * kTile;   // [H]
  float* l_s = m_s + H;           // [H]
  float* c_s = l_s + H;           // [H] rescale of this tile
  const int64_t i = blockIdx.x;
  const int s = blockIdx.y, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int hb = int(blockIdx.z) * H, H_all = int(gridDim.z) * H;  // this CTA's first head, all heads
  const int32_t seq = a.m.tok_seq[i];
  const int64_t n_ctx = int64_t(a.m.tok_pos[i]) + 1;
  for (int x = tid; x < H * E; x += kThreads) {
    const int h = x / E, k = x % E;
    q_s[x] = a.scale * (k < R ? a.q_hat[i * a.qhs + int64_t(hb + h) * R + k]
                              : a.q_pe[i * a.qps + (hb + h) * a.qph + k - R]);
  }
  for (int h = tid; h < H; h += kThreads) m_s[h] = -FLT_MAX, l_s[h] = 0.0f;
  float acc[kHeadsPerThread][kColsPerThread];
#pragma unroll
  for (int q = 0; q < kHeadsPerThread; ++q)
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j) acc[q][j] = 0.0f;
  const int col0 = tid % 128, head0 = tid / 128;
  const int nh = (H - warp + kThreads / 32 - 1) / (kThreads / 32);  // this warp's heads: warp + 8q
  const int64_t n_tiles = (n_ctx + kTile - 1) / kTile;
  for (int64_t tile = s; tile < n_tiles; tile += a.S) {
    const int64_t t0 = tile * kTile;
    const int n = int(n_ctx - t0 < kTile ? n_ctx - t0 : kTile);
    __syncthreads();  // q_s / m_s ready; e_s and p_s free
    for (int p = warp; p < n; p += kThreads / 32) {
      const float* src = entry(a.m, seq, t0 + p);
      for (int k = lane; k < E; k += 32) e_s[p * LD + k] = src[k];
    }
    __syncthreads();
    // Scores: lane p of warp w, heads w, w + 8, w + 16, w + 24 at once (16-byte shared loads).
    float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (lane < n) {
      const float4* er = reinterpret_cast<const float4*>(e_s + lane * LD);
      for (int k4 = 0; k4 < E / 4; ++k4) {
        const float4 e = er[k4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if (q < nh) {
            const float4 qv = reinterpret_cast<const float4*>(q_s + (warp + 8 * q) * E)[k4];
            dot[q] += qv.x * e.x + qv.y * e.y + qv.z * e.z + qv.w * e.w;
          }
        }
      }
    }
    // Online softmax per head over the tile, within the warp.
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (q >= nh) break;
      const int h = warp + 8 * q;
      const float sc = lane < n ? dot[q] : -FLT_MAX;
      float mx = sc;
#pragma unroll
      for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_old = m_s[h], m_new = fmaxf(m_old, mx);
      const float pr = lane < n ? expf(sc - m_new) : 0.0f;
      float sum = pr;
#pragma unroll
      for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      p_s[h * kTile + lane] = pr;
      __syncwarp();
      if (lane == 0) {
        const float corr = expf(m_old - m_new);
        c_s[h] = corr;
        l_s[h] = l_s[h] * corr + sum;
        m_s[h] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kHeadsPerThread; ++q) {
      const int h = head0 + 2 * q;
      if (h >= H) break;
      const float corr = c_s[h];
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) acc[q][j] *= corr;
    }
    for (int p = 0; p < n; ++p) {
      float e[kColsPerThread];
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) {
        const int c = col0 + 128 * j;
        e[j] = c < R ? e_s[p * LD + c] : 0.0f;
      }
#pragma unroll
      for (int q = 0; q < kHeadsPerThread; ++q) {
        const int h = head0 + 2 * q;
        if (h >= H) break;
        const float pr = p_s[h * kTile + p];
#pragma unroll
        for (int j = 0; j < kColsPerThread; ++j) acc[q][j] += pr * e[j];
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < kHeadsPerThread; ++q) {
    const int h = head0 + 2 * q;
    if (h >= H) break;
    if (a.S == 1) {
      const float inv = 1.0f / l_s[h];
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) {
        const int c = col0 + 128 * j;
        if (c < R) a.ctx[i * a.cs + int64_t(hb + h) * R + c] = acc[q][j] * inv;
      }
    } else {
      float* out = a.part + ((i * a.S + s) * H_all + hb + h) * (2 + R);
      if (col0 == 0) out[0] = m_s[h], out[1] = l_s[h];
#pragma unroll
      for (int j = 0; j < kColsPerThread; ++j) {
        const int c = col0 + 128 * j;
        if (c < R) out[2 + c] = acc[q][j];
      }
    }
  }
}

// One CTA per (token, head, 128 latent columns), a thread per column: merges the S <= kMaxSplits
// partial (m, l, O); the splits with l = 0 (no positions; a suffix) are skipped and their O not read.
// The splits' weights exp(m_s - M) / L are computed into shared memory by every CTA; each thread's
// loads over the splits are independent (many in flight).
constexpr int kMaxSplits = 128;
constexpr int kMergeThreads = 128;  // = kMaxSplits: every thread takes part in the weights
__global__ void __launch_bounds__(kMergeThreads)
    mla_merge_kernel(const float* part, int S, int H, int R, float* ctx, int64_t cs) {
  pdl_wait();  // launched with PDL (pdl.cuh) after the split kernel
  pdl_trigger();
  __shared__ float wgt[kMaxSplits];
  __shared__ float red[kMaxSplits / 32];
  const int64_t i = blockIdx.x;
  const int h = blockIdx.y, tid = threadIdx.x;
  const float* base = part + (i * S * H + h) * int64_t(2 + R);
  const int64_t step = int64_t(H) * (2 + R);
  if (tid < kMaxSplits) {  // warps 0 .. 3: the weights
    const float m = tid < S ? base[tid * step] : -FLT_MAX;
    float M = m;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    if (tid % 32 == 0) red[tid / 32] = M;
    asm volatile("bar.sync 1, 128;");
    M = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    const float e = tid < S ? expf(m - M) : 0.0f;
    float L = tid < S ? base[tid * step + 1] * e : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) L += __shfl_xor_sync(0xffffffffu, L, o);
    asm volatile("bar.sync 1, 128;");
    if (tid % 32 == 0) red[tid / 32] = L;
    asm volatile("bar.sync 1, 128;");
    L = red[0] + red[1] + red[2] + red[3];
    if (tid < S) wgt[tid] = e / L;
  }
  // The splits with positions (l >= 1) come first: both split kernels leave only a suffix of splits
  // empty (their O may be unwritten, and is not read).
  const int used = __syncthreads_count(tid < S && base[tid * step + 1] > 0.0f);
  for (int c = int(blockIdx.z) * kMergeThreads + tid; c < R; c += int(gridDim.z) * kMergeThreads) {
    float o = 0.0f;
#pragma unroll 16
    for (int s = 0; s < used; ++s) o += base[s * step + 2 + c] * wgt[s];
    ctx[i * cs + int64_t(h) * R + c] = o;
  }
}

}  // namespace

float* mla_partials(const MlaLaunch& m, int S, int64_t H) {
  float* part = nullptr;
  if (S > 1) part = static_cast<float*>(alloc_device(m.T * S * H * (2 + m.R) * int64_t(sizeof(float))));
  return part;
}

void mla_merge_partials(float* part, const MlaLaunch& m, int S, int64_t H, float* ctx, int64_t ctx_stride) {
  if (S <= 1) return;
  const unsigned col_blocks = unsigned((m.R + kMergeThreads - 1) / kMergeThreads);
  launch_pdl(mla_merge_kernel, dim3(unsigned(m.T), unsigned(H), col_blocks), dim3(kMergeThreads), 0, part, S,
             int(H), int(m.R), ctx, ctx_stride);
  check_launch("mla merge kernel");
  free_device(part);
}

bool launch_mla_attention_split(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                                const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                                float* ctx, int64_t ctx_stride) {
  const int64_t E = m.R + m.dr;
  if (H > kMaxHeads || m.R > 128 * kColsPerThread || E % 4 != 0) return false;
  // Head groups for one or two tokens (latency-bound): G groups of H / G heads. More tokens keep all
  // heads in one CTA (measured: 4 groups at 8 tokens of 32k context ran 1.8x slower).
  const int G = m.T <= 2 && H % 4 == 0 ? 4 : 1;
  const int64_t Hg = H / G;
  const size_t smem = size_t(Hg * E + kTile * (E + 4) + Hg * kTile + 3 * Hg) * sizeof(float);
  if (smem > 200 * 1024) return false;
  static const bool attr = [] {
    check(cudaFuncSetAttribute(mla_split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024),
          "mla split: shared memory limit");
    return true;
  }();
  (void)attr;
  // Two CTAs' worth of work per SM in all; S = 1 once the tokens alone fill the GPU.
  const int64_t want = (2 * int64_t(multiprocessor_count()) + m.T * G - 1) / (m.T * G);
  const int S = int(want < 1 ? 1 : (want > kMaxSplits ? kMaxSplits : want));
  MlaSplitArgs a{m,           int(Hg),          S,     q_hat, q_hat_stride, q_pe,
                 q_pe_stride, q_pe_head_stride, scale, ctx,   ctx_stride,   mla_partials(m, S, H)};
  mla_split_kernel<<<dim3(unsigned(m.T), unsigned(S), unsigned(G)), kThreads, smem>>>(a);
  check_launch("mla split kernel");
  mla_merge_partials(a.part, m, S, H, ctx, ctx_stride);
  return true;
}

}  // namespace ds::cuda
