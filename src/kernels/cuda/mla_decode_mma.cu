// MLA absorbed attention over the paged latents on the tensor cores (bf16 operands, f32 accumulation
// and softmax), for decode and other short query runs: CTA (i, s, g) holds heads 32g .. 32g + 31 of
// token i (all of them up to 32 heads; padded to 32 rows) and walks tiles [s*n, (s+1)*n) of 32
// context positions, n = max(ceil(tiles / S), 2) (CTAs past the last tile write an empty partial). Per tile:
// the f32 latent rows are loaded into registers one tile ahead (warp w rows 4w .. 4w + 3, 20 16-byte loads
// per thread in flight while the tile before is computed; page lookups once per row), stored as bf16 into one
// of two shared buffers; the scores Q·Eᵀ [32 heads x 32 positions] as mma m16n8k16 with one 16x8 tile per
// warp; an online softmax whose tile maxima and sums cross the warps through shared memory; P as bf16 into
// shared memory; O [32, R] += P·E with each warp owning 64 latent columns (16 accumulator tiles). S > 1
// writes (m, l, O) partials that mla_split.cu's merge combines; S = 1 writes ctx. The plain reference is the
// CPU's f32 mla_attention (kernels/cpu/mla_attention.cpp); the f32 CUDA kernels are mla_split.cu/mla.cu.
// Launched with PDL (pdl.cuh): the first tile's older rows are loaded before the wait.
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kThreads = 256;                          // 8 warps
constexpr int kTile = 32;                              // context positions per tile
constexpr int kHeads = 32;                             // query rows (heads, zero-padded)
constexpr int kMaxE = 576;                             // R + dr
constexpr int kRowsPerWarp = kTile / (kThreads / 32);  // 4 rows of a tile (or heads of Q) per warp
constexpr int kColLoads = (kMaxE / 4 + 31) / 32;       // 16-byte loads per lane and row
constexpr int kLoads = kRowsPerWarp * kColLoads;       // 20 in flight per thread
constexpr int kMinTiles = 2;     // tiles per CTA at least (short contexts: fewer partials to merge)
constexpr int kMaxSplits = 128;  // mla_split.cu's merge takes up to this many

// Warp w loads rows 4w .. 4w + 3 of tile positions t0 .. t0 + 31 (positions from n_ctx on as zeros);
// lane l columns l, l + 32, ... (16-byte units). table: the sequence's page-table entries.
__device__ __forceinline__ void load_tile(float4 (&st)[kLoads], const MlaLaunch& m, const int32_t* table,
                                          int t0, int n_ctx, int E4, int warp, int lane) {
  const int P = int(m.page_tokens);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = t0 + warp * kRowsPerWarp + r;
    const float4* row = nullptr;
    if (t < n_ctx)
      row = reinterpret_cast<const float4*>(m.pool + (int64_t(table[t / P]) * P + t % P) * (m.R + m.dr));
#pragma unroll
    for (int q = 0; q < kColLoads; ++q) {
      const int c4 = lane + 32 * q;
      st[r * kColLoads + q] =
          row != nullptr && c4 < E4 ? __ldg(row + c4) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
}

// Rows 4w .. 4w + 3 of a [32, LD] bf16 buffer from the registers of load_tile / the Q load, times scale.
__device__ __forceinline__ void store_rows(const float4 (&st)[kLoads], __nv_bfloat16* dst, int E4, int LD,
                                           int warp, int lane, float scale) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int q = 0; q < kColLoads; ++q) {
      const int c4 = lane + 32 * q;
      if (c4 < E4) {
        const float4 v = st[r * kColLoads + q];
        *reinterpret_cast<uint2*>(dst + (warp * kRowsPerWarp + r) * LD + c4 * 4) =
            make_uint2(pack_bf16(scale * v.x, scale * v.y), pack_bf16(scale * v.z, scale * v.w));
      }
    }
}

__global__ void __launch_bounds__(kThreads, 1) mla_decode_mma_kernel(MlaSplitArgs a) {
  extern __shared__ float4 sm4[];
  const int R = int(a.m.R), E = int(a.m.R + a.m.dr), E4 = E / 4, LD = E + 8, PLD = kTile + 8;
  __nv_bfloat16* q_s = reinterpret_cast<__nv_bfloat16*>(sm4);  // [32, LD], pre-scaled
  __nv_bfloat16* e_buf0 = q_s + kHeads * LD;   // two tile buffers [32, LD], the second kHeads * LD later
  __nv_bfloat16* p_s = q_s + 3 * kHeads * LD;  // [32 heads, PLD]
  float* red_max = reinterpret_cast<float*>(p_s + kHeads * PLD);  // [4 n-tiles, 32 heads]
  float* red_sum = red_max + 4 * kHeads;                          // [4, 32]
  const int64_t i = blockIdx.x;
  const int s = blockIdx.y, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int hg = int(blockIdx.z) * kHeads;  // this CTA's first head (head groups of 32)
  const int g = lane / 4, t4 = lane % 4;
  const int seq = a.m.tok_seq[i];
  const int32_t* table = a.m.page_table + a.m.page_offset[seq];
  const int n_ctx = a.m.tok_pos[i] + 1;
  const int n_tiles = (n_ctx + kTile - 1) / kTile, even = (n_tiles + a.S - 1) / a.S;
  const int per = even > kMinTiles ? even : kMinTiles;
  const int tile0 = s * per < n_tiles ? s * per : n_tiles,
            tile1 = tile0 + per < n_tiles ? tile0 + per : n_tiles;

  // The first tile's latents before the wait for the kernel before (PDL) where the tile holds only
  // positions from before the step: the step's index arrays and those rows are written by no kernel of
  // the step (mla_write writes the new positions). A launch holds whole sequences, their tokens in a
  // row at consecutive positions: the first new position of token i's sequence is tok_pos[i] if i is
  // its sequence's first token here, else at least tok_pos[i] - i.
  const int first_new = i > 0 && a.m.tok_seq[i - 1] == seq ? int(a.m.tok_pos[i] - i) : a.m.tok_pos[i];
  float4 st[kLoads];
  const bool early = tile0 < tile1 && (tile0 + 1) * kTile <= first_new;
  if (early) {
    load_tile(st, a.m, table, tile0 * kTile, n_ctx, E4, warp, lane);
    store_rows(st, e_buf0, E4, LD, warp, lane, 1.0f);
  }
  pdl_wait();
  pdl_trigger();
  // Q (scaled, bf16): warp w heads 4w .. 4w + 3 (past H: zero rows), all loads in flight at once.
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int h = hg + warp * kRowsPerWarp + r;
#pragma unroll
    for (int q = 0; q < kColLoads; ++q) {
      const int k = (lane + 32 * q) * 4;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (h < a.H && k < E)
        v = k < R ? *reinterpret_cast<const float4*>(a.q_hat + i * a.qhs + int64_t(h) * R + k)
                  : *reinterpret_cast<const float4*>(a.q_pe + i * a.qps + int64_t(h) * a.qph + (k - R));
      st[r * kColLoads + q] = v;
    }
  }
  store_rows(st, q_s, E4, LD, warp, lane, a.scale);
  if (tile0 < tile1) {
    if (!early) {
      load_tile(st, a.m, table, tile0 * kTile, n_ctx, E4, warp, lane);
      store_rows(st, e_buf0, E4, LD, warp, lane, 1.0f);
    }
    if (tile0 + 1 < tile1) load_tile(st, a.m, table, (tile0 + 1) * kTile, n_ctx, E4, warp, lane);
  }

  // This thread's 4 heads: slot 2*mt + u is head 16*mt + g + 8*u.
  float m_run[4], l_run[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) m_run[q] = -FLT_MAX, l_run[q] = 0.0f;
  float acc[2][8][4];  // [m-tile][n-tile of this warp's 64 columns][fragment]
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[mt][j][r] = 0.0f;
  const int smt = warp & 1, snt = warp >> 1;  // the score tile of this warp
  const int col0 = warp * 64;                 // the output columns of this warp
  const bool has_cols = col0 < R;
  // ldmatrix row addresses: lane l supplies row l % 8 of matrix l / 8.
  const int lr = lane % 8, lm = lane / 8;

  for (int tile = tile0; tile < tile1; ++tile) {
    const int buf = (tile - tile0) & 1;
    const __nv_bfloat16* e_s = e_buf0 + buf * kHeads * LD;
    __syncthreads();  // (A) e_s and q_s written; the previous tile's P·E is done everywhere
    if (tile + 1 < tile1) {
      store_rows(st, e_buf0 + (buf ^ 1) * kHeads * LD, E4, LD, warp, lane, 1.0f);
      if (tile + 2 < tile1) load_tile(st, a.m, table, (tile + 2) * kTile, n_ctx, E4, warp, lane);
    }
    // Scores of heads 16*smt .. +15 at positions 8*snt .. +7.
    float sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    {
      const __nv_bfloat16* qa = q_s + (smt * 16 + lr + (lm & 1) * 8) * LD + (lm >> 1) * 8;
      const __nv_bfloat16* eb = e_s + (snt * 8 + lr) * LD + lm * 8;
      for (int k0 = 0; k0 < E; k0 += 32) {
        uint32_t a0[4], a1[4], b[4];
        ldmatrix_x4(a0, qa + k0);
        ldmatrix_x4(a1, qa + k0 + 16);
        ldmatrix_x4(b, eb + k0);
        mma_16816(sc, a0, b[0], b[1]);
        mma_16816(sc, a1, b[2], b[3]);
      }
    }
    const int pos = tile * kTile + snt * 8 + 2 * t4;
    if (pos >= n_ctx) sc[0] = sc[2] = -FLT_MAX;
    if (pos + 1 >= n_ctx) sc[1] = sc[3] = -FLT_MAX;
    float mx0 = fmaxf(sc[0], sc[1]), mx1 = fmaxf(sc[2], sc[3]);
#pragma unroll
    for (int o = 1; o < 4; o *= 2) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o));
    }
    if (t4 == 0) red_max[snt * kHeads + smt * 16 + g] = mx0, red_max[snt * kHeads + smt * 16 + g + 8] = mx1;
    __syncthreads();  // (B)
    float m_new[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int h = (q >> 1) * 16 + g + (q & 1) * 8;
      m_new[q] = fmaxf(fmaxf(m_run[q], fmaxf(red_max[h], red_max[kHeads + h])),
                       fmaxf(red_max[2 * kHeads + h], red_max[3 * kHeads + h]));
    }
    {
      const float mlo = smt ? m_new[2] : m_new[0], mhi = smt ? m_new[3] : m_new[1];  // no run-time index
      const float p0 = __expf(sc[0] - mlo), p1 = __expf(sc[1] - mlo);
      const float p2 = __expf(sc[2] - mhi), p3 = __expf(sc[3] - mhi);
      const int h = smt * 16 + g, c = snt * 8 + 2 * t4;
      *reinterpret_cast<uint32_t*>(p_s + h * PLD + c) = pack_bf16(p0, p1);
      *reinterpret_cast<uint32_t*>(p_s + (h + 8) * PLD + c) = pack_bf16(p2, p3);
      float s0 = p0 + p1, s1 = p2 + p3;
#pragma unroll
      for (int o = 1; o < 4; o *= 2) {
        s0 += __shfl_xor_sync(0xffffffffu, s0, o);
        s1 += __shfl_xor_sync(0xffffffffu, s1, o);
      }
      if (t4 == 0) red_sum[snt * kHeads + h] = s0, red_sum[snt * kHeads + h + 8] = s1;
    }
    __syncthreads();  // (C) P and the sums visible
    float corr[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int h = (q >> 1) * 16 + g + (q & 1) * 8;
      corr[q] = __expf(m_run[q] - m_new[q]);
      l_run[q] = l_run[q] * corr[q] + (red_sum[h] + red_sum[kHeads + h]) +
                 (red_sum[2 * kHeads + h] + red_sum[3 * kHeads + h]);
      m_run[q] = m_new[q];
    }
    if (has_cols) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          acc[mt][j][0] *= corr[2 * mt], acc[mt][j][1] *= corr[2 * mt];
          acc[mt][j][2] *= corr[2 * mt + 1], acc[mt][j][3] *= corr[2 * mt + 1];
        }
#pragma unroll
      for (int k0 = 0; k0 < kTile; k0 += 16) {
        uint32_t pa[2][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
          ldmatrix_x4(pa[mt], p_s + (mt * 16 + lr + (lm & 1) * 8) * PLD + k0 + (lm >> 1) * 8);
#pragma unroll
        for (int j = 0; j < 8; j += 2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, e_s + (k0 + lr + (lm & 1) * 8) * LD + col0 + j * 8 + (lm >> 1) * 8);
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            mma_16816(acc[mt][j], pa[mt], b[0], b[1]);
            mma_16816(acc[mt][j + 1], pa[mt], b[2], b[3]);
          }
        }
      }
    }
  }

  // Results: this thread's heads (slots), columns col0 + 8j + 2*t4 (+1); S = 1: ctx, else a partial.
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int h = hg + mt * 16 + g + 8 * u;
      if (h >= a.H) continue;
      float* out = a.ctx + i * a.cs + int64_t(h) * R;
      float mul = 1.0f / l_run[2 * mt + u];
      if (a.S > 1) {
        out = a.part + ((i * a.S + s) * a.H + h) * int64_t(2 + R) + 2, mul = 1.0f;
        if (warp == 0 && t4 == 0) out[-2] = m_run[2 * mt + u], out[-1] = l_run[2 * mt + u];
        if (tile0 == tile1) continue;  // the merge skips splits with l = 0
      }
      if (!has_cols) continue;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        *reinterpret_cast<float2*>(out + col0 + 8 * j + 2 * t4) =
            make_float2(acc[mt][j][2 * u] * mul, acc[mt][j][2 * u + 1] * mul);
    }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

bool launch_mla_attention_mma(const MlaLaunch& m, int64_t H, const float* q_hat, int64_t q_hat_stride,
                              const float* q_pe, int64_t q_pe_stride, int64_t q_pe_head_stride, float scale,
                              float* ctx, int64_t ctx_stride) {
  const int64_t E = m.R + m.dr;
  if (m.R % 64 != 0 || m.R > 512 || E % 32 != 0 || E > kMaxE) return false;
  if (!aligned16(m.pool) || !aligned16(q_hat) || !aligned16(q_pe) || q_hat_stride % 4 != 0 ||
      q_pe_stride % 4 != 0 || q_pe_head_stride % 4 != 0 || ctx_stride % 2 != 0 || !aligned16(ctx))
    return false;
  const size_t smem = size_t(3 * kHeads * (E + 8) + kHeads * (kTile + 8)) * 2 + 8 * kHeads * sizeof(float);
  static const bool attr = [] {
    check(cudaFuncSetAttribute(mla_decode_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               3 * kHeads * (kMaxE + 8) * 2 + kHeads * (kTile + 8) * 2 + 8 * kHeads * 4),
          "mla mma: shared memory limit");
    return true;
  }();
  (void)attr;
  // One CTA per SM (shared memory): the tokens times the splits fill one wave.
  const int64_t G = (H + kHeads - 1) / kHeads;  // head groups (the latents are read once per group)
  const int64_t want = int64_t(multiprocessor_count()) / (m.T * G);
  const int S = int(want < 1 ? 1 : (want > kMaxSplits ? kMaxSplits : want));
  MlaSplitArgs a{m,           int(H),           S,     q_hat, q_hat_stride, q_pe,
                 q_pe_stride, q_pe_head_stride, scale, ctx,   ctx_stride,   mla_partials(m, S, H)};
  launch_pdl(mla_decode_mma_kernel, dim3(unsigned(m.T), unsigned(S), unsigned(G)), dim3(kThreads), smem, a);
  check_launch("mla decode mma kernel");
  mla_merge_partials(a.part, m, S, H, ctx, ctx_stride);
  return true;
}

}  // namespace ds::cuda
