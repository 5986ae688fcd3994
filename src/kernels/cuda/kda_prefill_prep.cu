// KDA chunked prefill, kernel K1 "prep" (token-parallel; the two-kernel design and the record are
// described in kda_prefill.cu). Per (chunk, head): L2 norms of q and k, the decay gate and its
// cumulative sum, β, and the record K̂, Q̂, K̃, A = (I + L)⁻¹ Diag(β), M, γ, with the pair sums of L
// and M on tensor cores (factored around the chunk's middle row, or hierarchically when the gate
// decays too steeply for that).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_prefill_record.cuh"
#include "kernels/cuda/mma.cuh"

namespace ds::cuda {
namespace {

using namespace kda_prefill_detail;

constexpr float kLog2e = 1.4426950408889634f;
// Largest half-span (log2 units) for which the factored pair products stay in f32/bf16 range
// (2^±112): 77 nats, so every chunk of the bounded gate (at most 8 × 5 = 40 nats) qualifies.
constexpr float kMaxHalfSpan = 112.0f;

struct K1Params {
  const void *q, *k, *f, *b;
  int64_t q_stride, k_stride, f_stride, b_stride;  // elements per row
  const float *a_log, *dt_bias;
  float lower_bound, scale;
  const int2* chunk_rows;  // [n_chunks] {first row, valid rows}
  uint8_t* records;        // [H][n_chunks][kRecordBytes]
  int64_t n_chunks;
  int64_t chunk0;  // this launch's first chunk
  // Chained form (KdaPrepChain): heads fastest in launch order (grid (H, groups)), and after its
  // records are written each CTA adds them to win_count[h * n_windows + chunk >> win_shift].
  int* win_count;
  int win_shift;
  int64_t n_windows;
  bool heads_first;
};

// Per-channel f32 rows in shared memory (the gate tile, 2^G_mid, ...): channels 8p .. 8p+3 at words
// 4p .. 4p+3 and channels 8p+4 .. 8p+7 at words kGHi + 4p .., so that the two 16-byte halves a thread
// reads for its 8 channels fall in distinct bank groups for 8 consecutive threads (contiguous halves
// would be 2-way conflicts), and a warp's 32 consecutive channels still take 32 distinct banks
// (kGHi ≡ 16 mod 32).
constexpr int kGHi = 80, kGLd = 144;
__device__ __forceinline__ int gpos(int c) {
  return ((c >> 2) & 1) * kGHi + ((c >> 3) << 2) + (c & 3);
}

template <class T>
struct K1Smem {
  T q[kC][kD], k[kC][kD];                      // raw rows (zero past the chunk's end)
  alignas(16) float g[kC][kGLd];               // gate pre-activation, then the cumulative gate G (log2 units)
  alignas(16) __nv_bfloat16 tile[4][kC * kD];  // mma operands of the pair sums (swizzled)
  float L[kC][kC + 1], M[kC][kC + 1];
  float beta[kC], inv_q[kC], inv_k[kC], qk[kC];
  alignas(16) float e_mid[kGLd], e_last_mid[kGLd];  // fast path, per channel: 2^G_mid, 2^(G_last − G_mid)
};

// The global loads of one chunk, held in registers from their issue until they are stored to
// shared memory: q, k and the gate pre-activation rows as 16-byte vectors (thread x takes vectors
// x, x + 128, ...; rows past the chunk's end are zero) and, in threads j < 16, the β logit of row j.
template <class T>
struct ChunkLoads {
  static constexpr int kPer = 16 / int(sizeof(T)), kVecPerRow = kD / kPer, kVecs = kC * kVecPerRow / 128;
  uint4 q[kVecs], k[kVecs], f[kVecs];
  float b;
};

// Issues every load of rows [row0, row0 + len) of head h (no use of the results here).
template <class T>
__device__ __forceinline__ void issue_loads(const K1Params& p, int64_t row0, int len, int h,
                                            ChunkLoads<T>& L) {
  using CL = ChunkLoads<T>;
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < CL::kVecs; ++i) {
    const int idx = threadIdx.x + 128 * i, r = idx / CL::kVecPerRow, c = (idx % CL::kVecPerRow) * CL::kPer;
    L.q[i] = L.k[i] = L.f[i] = zero;
    if (r < len) {
      const int64_t col = int64_t(h) * kD + c;
      L.q[i] = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + (row0 + r) * p.q_stride + col);
      L.k[i] = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.k) + (row0 + r) * p.k_stride + col);
      L.f[i] = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.f) + (row0 + r) * p.f_stride + col);
    }
  }
  const int j = threadIdx.x;
  L.b = j < kC && j < len ? to_f32(static_cast<const T*>(p.b)[(row0 + j) * p.b_stride + h]) : 0.0f;
}

// One warp: C[16][16] (smem, f32) = X · Yᵀ for swizzled [16][128] bf16 tiles X, Y. level 0 writes
// every entry; level l in 1..4 only the pairs (r, i) first separated at block size 32 >> l (same
// block, r in its upper half, i in its lower half).
__device__ void warp_xyt(const __nv_bfloat16* X, const __nv_bfloat16* Y, float (*C)[kC + 1], int level) {
  const int lane = threadIdx.x % 32, mat = lane / 8, rr = lane % 8;
  float acc[2][4] = {};
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    uint32_t a[4], b[4];
    ldmatrix_x4(a, X + swz128((mat % 2) * 8 + rr, 16 * ks + (mat / 2) * 8));
    ldmatrix_x4(b, Y + swz128((mat / 2) * 8 + rr, 16 * ks + (mat % 2) * 8));
    mma_16816(acc[0], a, b[0], b[1]);
    mma_16816(acc[1], a, b[2], b[3]);
  }
  // Block size 32 >> level is a power of two: block tests as bit tests (a run-time level would make
  // `/` and `%` integer divisions).
  const int g = lane / 4, t = lane % 4, half = 16 >> level;
  auto put = [&](int r, int i, float v) {
    if (level == 0 || ((r ^ i) < 2 * half && (r & half) != 0 && (i & half) == 0)) C[r][i] = v;
  };
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    put(g, 8 * nt + 2 * t, acc[nt][0]);
    put(g, 8 * nt + 2 * t + 1, acc[nt][1]);
    put(g + 8, 8 * nt + 2 * t, acc[nt][2]);
    put(g + 8, 8 * nt + 2 * t + 1, acc[nt][3]);
  }
}

// The elements of a 16-byte vector as f32, by register moves (taking the vector's address, as a
// reinterpret_cast to its element type would, puts the vector in local memory).
__device__ __forceinline__ void unpack_f32(const uint4& u, float (&x)[4]) {
  x[0] = __uint_as_float(u.x), x[1] = __uint_as_float(u.y), x[2] = __uint_as_float(u.z),
  x[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void unpack_f32(const uint4& u, float (&x)[8]) {  // 8 bf16
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int e = 0; e < 4; ++e)
    x[2 * e] = __uint_as_float(w[e] << 16), x[2 * e + 1] = __uint_as_float(w[e] & 0xffff0000u);
}

// Stores the loads of one chunk into s.q, s.k (raw), s.g (gate pre-activation, f32) and s.beta.
template <class T>
__device__ __forceinline__ void store_loads(const ChunkLoads<T>& L, int len, K1Smem<T>& s) {
  using CL = ChunkLoads<T>;
#pragma unroll
  for (int i = 0; i < CL::kVecs; ++i) {
    const int idx = threadIdx.x + 128 * i, r = idx / CL::kVecPerRow, c = (idx % CL::kVecPerRow) * CL::kPer;
    *reinterpret_cast<uint4*>(&s.q[r][c]) = L.q[i];
    *reinterpret_cast<uint4*>(&s.k[r][c]) = L.k[i];
    float fv[CL::kPer];
    unpack_f32(L.f[i], fv);
#pragma unroll
    for (int e = 0; e < CL::kPer; e += 4)
      *reinterpret_cast<float4*>(&s.g[r][gpos(c + e)]) = make_float4(fv[e], fv[e + 1], fv[e + 2], fv[e + 3]);
  }
  const int j = threadIdx.x;
  if (j < kC) s.beta[j] = j < len ? 1.0f / (1.0f + expf(-L.b)) : 0.0f;
}

// Eight consecutive channels as bf16, one 16-byte piece of a swizzled tile.
__device__ __forceinline__ uint4 pack8(const float (&x)[8]) {
  return make_uint4(pack_bf16(x[0], x[1]), pack_bf16(x[2], x[3]), pack_bf16(x[4], x[5]),
                    pack_bf16(x[6], x[7]));
}
// Eight consecutive f32 (16-byte aligned) from shared memory, in two vector loads.
__device__ __forceinline__ void ld8(const float* src, float (&x)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(src), b = *reinterpret_cast<const float4*>(src + 4);
  x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
}
// Channels c .. c+7 (c a multiple of 8) of a per-channel f32 row in the gpos layout, in two vector loads.
__device__ __forceinline__ void ld8g(const float* row, int c, float (&x)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(row + (c >> 1)),
               b = *reinterpret_cast<const float4*>(row + kGHi + (c >> 1));
  x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
}
// Eight consecutive activations (16-byte aligned) from shared memory, times `scale`.
__device__ __forceinline__ void ld8(const __nv_bfloat16* src, float scale, float (&x)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(src);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __bfloat1622float2(h[e]);
    x[2 * e] = f.x * scale, x[2 * e + 1] = f.y * scale;
  }
}
__device__ __forceinline__ void ld8(const float* src, float scale, float (&x)[8]) {
  ld8(src, x);
#pragma unroll
  for (int e = 0; e < 8; ++e) x[e] *= scale;
}

// Grid: (ceil(count / per_cta), H). CTA x walks chunks chunk0 + x·per_cta .. + per_cta − 1 (those
// below chunk0 + count); the loads of the next chunk are issued before the current one is
// computed, so every CTA keeps a chunk's q, k and gate rows in flight while it computes.
// kBlocks: CTAs per multiprocessor the registers are sized for. bf16: 6 fit by shared memory, but at 6
// (80 registers) the compiler keeps one 32-byte piece of the next chunk's loads in local memory, and
// its store waits for the load at issue, so the prefetch does not overlap; at 5 (96 registers) none.
template <class T, bool kSafeGate, int kBlocks>
__global__ void __launch_bounds__(128, kBlocks) kda_prep_kernel(K1Params p, int64_t count, int per_cta) {
  extern __shared__ __align__(16) uint8_t k1_smem_raw[];
  K1Smem<T>& s = *reinterpret_cast<K1Smem<T>*>(k1_smem_raw);
  const int h = p.heads_first ? blockIdx.x : blockIdx.y, j = threadIdx.x, warp = threadIdx.x / 32,
            lane = threadIdx.x % 32;
  const int64_t first = int64_t(p.heads_first ? blockIdx.y : blockIdx.x) * per_cta;
  const int n_mine = int(min(int64_t(per_cta), count - first));
  const float a = expf(p.a_log[h]);
  const float dt = p.dt_bias[int64_t(h) * kD + j];

  int2 cr = p.chunk_rows[p.chunk0 + first];
  ChunkLoads<T> loads;
  issue_loads<T>(p, cr.x, cr.y, h, loads);
#pragma unroll 1
  for (int it = 0; it < n_mine; ++it) {
    const int64_t chunk = p.chunk0 + first + it;
    const int len = cr.y;
    const int2 next = it + 1 < n_mine ? p.chunk_rows[chunk + 1] : make_int2(0, 0);
    __syncthreads();  // the previous chunk is done with shared memory
    store_loads<T>(loads, len, s);
    __syncthreads();
    if (it + 1 < n_mine) issue_loads<T>(p, next.x, next.y, h, loads);  // in flight during this chunk
    cr = next;

    // L2 norms and q·k: warp w takes rows 4w .. 4w+3.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = 4 * warp + i;
      float sq = 0.0f, sk = 0.0f, sqk = 0.0f;
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const float qv = to_f32(s.q[r][lane + 32 * m]), kv = to_f32(s.k[r][lane + 32 * m]);
        sq += qv * qv, sk += kv * kv, sqk += qv * kv;
      }
#pragma unroll
      for (int o = 16; o > 0; o /= 2) {
        sq += __shfl_xor_sync(0xffffffffu, sq, o);
        sk += __shfl_xor_sync(0xffffffffu, sk, o);
        sqk += __shfl_xor_sync(0xffffffffu, sqk, o);
      }
      if (lane == 0) {
        const float iq = rsqrtf(sq + 1e-6f), ik = rsqrtf(sk + 1e-6f);
        s.inv_q[r] = iq, s.inv_k[r] = ik, s.qk[r] = sqk * iq * ik;
      }
    }

    // Gate and inclusive cumulative sum along the chunk, channel j, in log2 units. Padded rows decay 0.
    const int gj = gpos(j);
    float G = 0.0f;
#pragma unroll
    for (int r = 0; r < kC; ++r) {
      float gate = 0.0f;
      if (r < len) {
        // Fast intrinsics: their ~2 ulp errors are far below the bf16 rounding of every operand.
        const float z = s.g[r][gj] + dt;
        if constexpr (kSafeGate) {
          gate = p.lower_bound * __fdividef(1.0f, 1.0f + __expf(-a * z));
        } else {
          gate = -a * (z > 20.0f ? z : __logf(1.0f + __expf(z)));
        }
      }
      G += gate * kLog2e;
      s.g[r][gj] = G;
    }
    const float G_mid = s.g[kC / 2 - 1][gj];
    const bool wide = -G_mid > kMaxHalfSpan || G_mid - G > kMaxHalfSpan;
    s.e_mid[gj] = fast_exp2(G_mid), s.e_last_mid[gj] = fast_exp2(G - G_mid);
    const bool slow = __syncthreads_or(wide);  // also orders the norms and G above

    // Record rows in the swizzled layout, one 16-byte piece (8 channels of one row) at a time, 2 per
    // thread: K̂, Q̂, K̃ straight to the workspace; on the fast path also its factored tiles, and
    // there 2^G_r = 2^G_mid · 2^(G_r − G_mid) and 2^(G_last − G_r) = 2^(G_last − G_mid) · 2^(G_mid − G_r)
    // (every factor within 2^±112), so each element costs two exp2 on either path.
    uint8_t* rec = p.records + (int64_t(h) * p.n_chunks + chunk) * kRecordBytes;
#pragma unroll 1
    for (int i = 0; i < 2; ++i) {
      const int idx = threadIdx.x + 128 * i, r = idx / 16, c = (idx % 16) * 8, o = swz128(r, c);
      float kn[8], qn[8], Gr[8], kh[8], qh[8], kt[8];
      ld8(&s.k[r][c], s.inv_k[r], kn);
      ld8(&s.q[r][c], s.inv_q[r], qn);
      ld8g(s.g[r], c, Gr);
      if (!slow) {
        float Gm[8], em[8], elm[8], up_k[8], down_k[8], up_q[8];
        ld8g(s.g[kC / 2 - 1], c, Gm);
        ld8g(s.e_mid, c, em);
        ld8g(s.e_last_mid, c, elm);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float d = Gr[e] - Gm[e];
          const float up = fast_exp2(d), down = fast_exp2(-d);
          kh[e] = kn[e] * (em[e] * up);
          qh[e] = p.scale * qn[e] * (em[e] * up);
          kt[e] = kn[e] * (elm[e] * down);
          up_k[e] = kn[e] * up, down_k[e] = kn[e] * down, up_q[e] = qn[e] * up;
        }
        *reinterpret_cast<uint4*>(&s.tile[0][o]) = pack8(up_k);    // P
        *reinterpret_cast<uint4*>(&s.tile[1][o]) = pack8(down_k);  // R
        *reinterpret_cast<uint4*>(&s.tile[2][o]) = pack8(up_q);    // Pq
      } else {
        float Gl[8];
        ld8g(s.g[kC - 1], c, Gl);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float ex = fast_exp2(Gr[e]);
          kh[e] = kn[e] * ex;
          qh[e] = p.scale * qn[e] * ex;
          kt[e] = kn[e] * fast_exp2(Gl[e] - Gr[e]);
        }
      }
      *reinterpret_cast<uint4*>(rec + kOffKhat + 2 * o) = pack8(kh);
      *reinterpret_cast<uint4*>(rec + kOffQhat + 2 * o) = pack8(qh);
      *reinterpret_cast<uint4*>(rec + kOffKtil + 2 * o) = pack8(kt);
    }
    reinterpret_cast<float*>(rec + kOffGamma)[j] = fast_exp2(G);
    __syncthreads();

    if (!slow) {
      if (warp == 0) warp_xyt(s.tile[0], s.tile[1], s.L, 0);
      if (warp == 1) warp_xyt(s.tile[2], s.tile[1], s.M, 0);
    } else {
      // Two rounds of two hierarchy levels: a k-factor tile and a q-factor tile per level.
#pragma unroll 1
      for (int round = 0; round < 2; ++round) {
#pragma unroll 1
        for (int i = 0; i < 2; ++i) {
          const int idx = threadIdx.x + 128 * i, r = idx / 16, c = (idx % 16) * 8, o = swz128(r, c);
          float kn[8], qn[8], Gr[8];
          ld8(&s.k[r][c], s.inv_k[r], kn);
          ld8(&s.q[r][c], s.inv_q[r], qn);
          ld8g(s.g[r], c, Gr);
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int level = 2 * round + half + 1, hb = 16 >> level;  // half-block rows
            const int pr = (r & ~(2 * hb - 1)) + hb - 1;               // last row of r's lower half-block
            const bool upper = (r & hb) != 0;
            float Gp[8], kf[8], qf[8];
            ld8g(s.g[pr], c, Gp);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              const float ex = fast_exp2(upper ? Gr[e] - Gp[e] : Gp[e] - Gr[e]);  // <= 1 on both sides
              kf[e] = kn[e] * ex, qf[e] = upper ? qn[e] * ex : 0.0f;
            }
            *reinterpret_cast<uint4*>(&s.tile[2 * half][o]) = pack8(kf);
            *reinterpret_cast<uint4*>(&s.tile[2 * half + 1][o]) = pack8(qf);
          }
        }
        __syncthreads();
        const int level = 2 * round + warp / 2 + 1;
        const __nv_bfloat16* k_tile = s.tile[2 * (warp / 2)];
        warp_xyt(warp % 2 == 0 ? k_tile : s.tile[2 * (warp / 2) + 1], k_tile, warp % 2 == 0 ? s.L : s.M,
                 level);
        __syncthreads();
      }
      if (j < kC) s.M[j][j] = s.qk[j];
    }
    __syncthreads();

    if (warp == 0 && lane < kC) {
      // Column `lane` of N = (I + L)⁻¹ by forward substitution, L[r][m] = β_r · Lraw[r][m] (m < r).
      const int i = lane;
      float col[kC];
#pragma unroll
      for (int r = 0; r < kC; ++r) col[r] = r == i ? 1.0f : 0.0f;
#pragma unroll
      for (int r = 1; r < kC; ++r) {
        float acc = 0.0f;
#pragma unroll
        for (int m = 0; m < r; ++m) acc += s.L[r][m] * col[m];
        if (r > i) col[r] = -s.beta[r] * acc;
      }
      __nv_bfloat16* A = reinterpret_cast<__nv_bfloat16*>(rec + kOffA);
      const float bi = s.beta[i];
#pragma unroll
      for (int r = 0; r < kC; ++r) A[swz16(r, i)] = __float2bfloat16_rn(col[r] * bi);
    } else if (warp == 1) {
      const int r = lane / 2, i0 = (lane % 2) * 8;
      uint32_t packed[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = i0 + 2 * e;
        packed[e] =
            pack_bf16(i <= r ? p.scale * s.M[r][i] : 0.0f, i + 1 <= r ? p.scale * s.M[r][i + 1] : 0.0f);
      }
      *reinterpret_cast<uint4*>(rec + kOffM + swz16(r, i0) * 2) =
          make_uint4(packed[0], packed[1], packed[2], packed[3]);
    }
  }
  if (p.win_count) {
    // Every thread's record stores made visible at device scope before thread 0's release-add
    // (the recurrence acquires the count and then bulk-copies the records).
    __threadfence();
    __syncthreads();
    if (j == 0) {
      int* counts = p.win_count + int64_t(h) * p.n_windows;
      const int64_t c0 = p.chunk0 + first, c1 = c0 + n_mine;
      for (int64_t c = c0; c < c1;) {
        const int64_t w = c >> p.win_shift, end = min(c1, (w + 1) << p.win_shift);
        asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(counts + w), "r"(int(end - c))
                     : "memory");
        c = end;
      }
    }
  }
}

using PrepKernel = void (*)(K1Params, int64_t, int);

// The prep kernel for a's gate and activation type. Register budget, bf16: 5 CTAs per multiprocessor,
// env DS_KDA_PREP_BLOCKS=6 for 6 (f32: 4). On an H200 (docs/perf.md), in whole calls at T = 32768, the
// two were within ±5 % per shape (5 faster at safe H = 96 and softplus H = 32, slower at softplus
// H = 64) and 0.5 % apart over both gates and H = 32 / 64 / 96; 5 is the measured default.
template <class T>
PrepKernel prep_kernel(const KdaPrefillLaunch& a) {
  const char* blocks_env = std::getenv("DS_KDA_PREP_BLOCKS");
  const bool six = blocks_env != nullptr && std::atoi(blocks_env) == 6;
  constexpr int kFewer = sizeof(T) == 2 ? 5 : 4, kMost = sizeof(T) == 2 ? 6 : 4;
  return a.safe_gate ? (six ? kda_prep_kernel<T, true, kMost> : kda_prep_kernel<T, true, kFewer>)
                     : (six ? kda_prep_kernel<T, false, kMost> : kda_prep_kernel<T, false, kFewer>);
}

}  // namespace

template <class T>
cudaFuncAttributes prepare_kda_prep(const KdaPrefillLaunch& a, bool max_carveout) {
  return prepare_prefill_kernel(reinterpret_cast<const void*>(prep_kernel<T>(a)), int(sizeof(K1Smem<T>)),
                                max_carveout);
}

template <class T>
void launch_kda_prep(const KdaPrefillLaunch& a, const int2* chunk_rows, uint8_t* records, int64_t n_chunks,
                     int64_t chunk0, int64_t count, cudaStream_t stream, const KdaPrepChain& chain) {
  if (count == 0) return;
  const K1Params p{a.q,
                   a.k,
                   a.f,
                   a.b,
                   a.q_stride,
                   a.k_stride,
                   a.f_stride,
                   a.b_stride,
                   a.a_log,
                   a.dt_bias,
                   a.lower_bound,
                   a.scale,
                   chunk_rows,
                   records,
                   n_chunks,
                   chunk0,
                   chain.win_count,
                   chain.win_shift,
                   chain.n_windows,
                   chain.win_count != nullptr};
  const int sms = multiprocessor_count();
  // Chunks per CTA: env DS_KDA_PREP_CHUNKS (1 to 16), else 2 while the grid still has about 12 CTAs
  // per multiprocessor (two waves of the 5 or 6 that fit), 1 below. On an H200 (docs/perf.md, runs 22
  // and 23), in whole calls at H = 32 / 64 / 96, 2 per CTA was up to 8 % faster than up to 4 where the
  // two differ (H >= 64), and within ±3 % at the other shapes.
  int per_cta = int(std::clamp<int64_t>(count * a.H / (int64_t(sms) * 12), 1, 2));
  if (const char* e = std::getenv("DS_KDA_PREP_CHUNKS")) per_cta = std::clamp(std::atoi(e), 1, 16);
  const unsigned groups = unsigned((count + per_cta - 1) / per_cta);
  const dim3 grid = p.heads_first ? dim3{unsigned(a.H), groups} : dim3{groups, unsigned(a.H)};
  const size_t smem = sizeof(K1Smem<T>);
  const PrepKernel prep = prep_kernel<T>(a);
  prepare_prefill_kernel(reinterpret_cast<const void*>(prep), int(smem), p.heads_first);
  prep<<<grid, 128, smem, stream>>>(p, count, per_cta);
  check_launch("kda_prefill prep kernel");
}

template void launch_kda_prep<float>(const KdaPrefillLaunch&, const int2*, uint8_t*, int64_t, int64_t,
                                     int64_t, cudaStream_t, const KdaPrepChain&);
template void launch_kda_prep<__nv_bfloat16>(const KdaPrefillLaunch&, const int2*, uint8_t*, int64_t, int64_t,
                                             int64_t, cudaStream_t, const KdaPrepChain&);
template cudaFuncAttributes prepare_kda_prep<float>(const KdaPrefillLaunch&, bool);
template cudaFuncAttributes prepare_kda_prep<__nv_bfloat16>(const KdaPrefillLaunch&, bool);

}  // namespace ds::cuda
