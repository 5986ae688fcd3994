// KDA chunked prefill on sm_90 (K = V = 128, chunks of 16 tokens), in two kernels:
//
// K1 "prep", token-parallel (grid: chunks × heads). Per chunk and head: L2 norm of q and k, the
//   decay gate and its cumulative sum G (log2 units), β = sigmoid(b), and a record in a workspace:
//     K̂ = k ⊙ 2^G, Q̂ = scale · q ⊙ 2^G, K̃ = k ⊙ 2^(G_last − G)   (bf16 16×128 each)
//     A = (I + L)⁻¹ Diag(β) with L[r,i] = β_r Σ_j k_r k_i 2^(G_r − G_i), i < r (bf16 16×16)
//     M = scale · Σ_j q_r k_i 2^(G_r − G_i), i <= r                        (bf16 16×16)
//     γ = 2^G_last                                                          (f32 128)
//   Every exponent in K̂, Q̂, K̃ and γ is <= 0, so they are safe for any gate. The pair sums of L
//   and M run on tensor cores. When both half-spans of the chunk fit in range (always for the
//   bounded gate, lower bound −5: at most 8 × 5 nats) they factor around the middle row m:
//   2^(G_r − G_i) = 2^(G_r − G_m) · 2^(G_m − G_i). Otherwise (Kimi Linear's unbounded softplus gate
//   with a steep decay) they factor hierarchically: the pairs first separated at block size
//   16, 8, 4, 2 factor around the last row p of their lower half-block, so both factors
//   2^(G_r − G_p) and 2^(G_p − G_i) are <= 1 and nothing can overflow; four levels, each one masked
//   16×16 product.
// K2 "recurrence", head-parallel (grid: sequences × heads × value slices). Each warp owns 16 value
//   rows of the transposed state Sᵀ [V, K] in f32 registers and walks the chunks in order:
//     Xᵀ = Vᵀ − Sᵀ K̂ᵀ,  Ṽᵀ = Xᵀ Aᵀ,  Oᵀ = Sᵀ Q̂ᵀ + Ṽᵀ Mᵀ,  Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃
//   all as bf16 mma.sync with f32 accumulation (the state is rounded to bf16 only as an mma operand,
//   as fla does). Chunk records and value tiles stream through a 3-stage cp.async pipeline. The
//   state is emitted (f32, [K, V] layout) into checkpoint slots after the requested chunks and into
//   the final slot at the end.
// Design after FlashKDA's K1/K2 split (MoonshotAI/FlashKDA, docs/20260420-flashkda-v1-deep-dive.md)
// and the chunkwise WY/UT form of the Kimi Linear report (arXiv 2510.26692, §3 and App. B).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/mma.cuh"

namespace ds::cuda {
namespace {

constexpr int kD = 128;  // K = V
constexpr int kC = 16;   // chunk
constexpr float kLog2e = 1.4426950408889634f;
// Largest half-span (log2 units) for which the factored pair products stay in f32/bf16 range
// (2^±112): 77 nats, so every chunk of the bounded gate (at most 8 × 5 = 40 nats) qualifies.
constexpr float kMaxHalfSpan = 112.0f;

// Record of one (head, chunk), bytes.
constexpr int kOffKhat = 0, kOffQhat = 4096, kOffKtil = 8192, kOffA = 12288, kOffM = 12800, kOffGamma = 13312;
constexpr int kRecordBytes = 13824;

// Per-sequence metadata for K2 (int32 each).
enum SeqMeta { kRow0, kLen, kChunk0, kNChunks, kInitSlot, kFinalSlot, kCk0, kCk1, kSeqMetaInts };

__device__ __forceinline__ float to_f32(float x) {
  return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

struct K1Params {
  const void *q, *k, *f, *b;
  int64_t q_stride, k_stride, f_stride, b_stride;  // elements per row
  const float *a_log, *dt_bias;
  float lower_bound, scale;
  const int2* chunk_rows;  // [n_chunks] {first row, valid rows}
  uint8_t* records;        // [H][n_chunks][kRecordBytes]
  int64_t n_chunks;
};

// Element offset of (r, c) in a [16][128] bf16 tile whose 16-byte chunks are XOR-swizzled by row:
// the layout of the record's K̂, Q̂, K̃ and of the prep kernel's mma tiles. Eight rows at one logical
// chunk land in eight different bank groups, so ldmatrix is conflict-free without padding and the
// record can be copied into shared memory with one bulk copy.
__device__ __forceinline__ int swz128(int r, int c) {
  return r * kD + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7);
}
// Same for the [16][16] tiles (A, M): two chunks per row, swizzled by bit 2 of the row.
__device__ __forceinline__ int swz16(int r, int c) {
  return r * kC + ((((c >> 3) ^ ((r >> 2) & 1))) << 3) + (c & 7);
}

constexpr int kGLd = 132;  // f32 row stride of the cumulative gate tile

template <class T>
struct K1Smem {
  T q[kC][kD], k[kC][kD];                      // raw rows (zero past the chunk's end)
  float g[kC][kGLd];                           // gate pre-activation, then the cumulative gate G (log2 units)
  alignas(16) __nv_bfloat16 tile[4][kC * kD];  // mma operands of the pair sums (swizzled)
  float L[kC][kC + 1], M[kC][kC + 1];
  float beta[kC], inv_q[kC], inv_k[kC], qk[kC];
};

// Rows [row0, row0 + len) of head h of a [T, H*128] tensor -> dst [16][128]; rows >= len are 0.
template <class T>
__device__ void load_rows(const void* src_v, int64_t stride, int64_t row0, int len, int h, T (*dst)[kD]) {
  constexpr int kPer = 16 / sizeof(T), kVecPerRow = kD / kPer;
  const T* src = static_cast<const T*>(src_v);
  for (int idx = threadIdx.x; idx < kC * kVecPerRow; idx += blockDim.x) {
    const int r = idx / kVecPerRow, c = (idx % kVecPerRow) * kPer;
    uint4 u = make_uint4(0, 0, 0, 0);
    if (r < len) u = *reinterpret_cast<const uint4*>(src + (row0 + r) * stride + int64_t(h) * kD + c);
    *reinterpret_cast<uint4*>(&dst[r][c]) = u;
  }
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
  const int g = lane / 4, t = lane % 4, bs = 32 >> level;
  auto put = [&](int r, int i, float v) {
    if (level == 0 || (r / bs == i / bs && r % bs >= bs / 2 && i % bs < bs / 2)) C[r][i] = v;
  };
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    put(g, 8 * nt + 2 * t, acc[nt][0]);
    put(g, 8 * nt + 2 * t + 1, acc[nt][1]);
    put(g + 8, 8 * nt + 2 * t, acc[nt][2]);
    put(g + 8, 8 * nt + 2 * t + 1, acc[nt][3]);
  }
}

template <class T, bool kSafeGate>
__global__ void __launch_bounds__(128) kda_prep_kernel(K1Params p) {
  extern __shared__ __align__(16) uint8_t k1_smem_raw[];
  K1Smem<T>& s = *reinterpret_cast<K1Smem<T>*>(k1_smem_raw);
  const int64_t chunk = blockIdx.x;
  const int h = blockIdx.y, j = threadIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int2 cr = p.chunk_rows[chunk];
  const int64_t row0 = cr.x;
  const int len = cr.y;

  load_rows<T>(p.q, p.q_stride, row0, len, h, s.q);
  load_rows<T>(p.k, p.k_stride, row0, len, h, s.k);
  {
    const T* f = static_cast<const T*>(p.f);
#pragma unroll 4
    for (int r = 0; r < kC; ++r)
      s.g[r][j] = r < len ? to_f32(f[(row0 + r) * p.f_stride + int64_t(h) * kD + j]) : 0.0f;
  }
  if (j < kC) {
    const float b = j < len ? to_f32(static_cast<const T*>(p.b)[(row0 + j) * p.b_stride + h]) : 0.0f;
    s.beta[j] = j < len ? 1.0f / (1.0f + expf(-b)) : 0.0f;
  }
  __syncthreads();

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
  const float a = expf(p.a_log[h]);
  const float dt = p.dt_bias[int64_t(h) * kD + j];
  float G = 0.0f;
#pragma unroll
  for (int r = 0; r < kC; ++r) {
    float gate = 0.0f;
    if (r < len) {
      // Fast intrinsics: their ~2 ulp errors are far below the bf16 rounding of every operand.
      const float z = s.g[r][j] + dt;
      if constexpr (kSafeGate) {
        gate = p.lower_bound * __fdividef(1.0f, 1.0f + __expf(-a * z));
      } else {
        gate = -a * (z > 20.0f ? z : __logf(1.0f + __expf(z)));
      }
    }
    G += gate * kLog2e;
    s.g[r][j] = G;
  }
  const float G_last = G, G_mid = s.g[kC / 2 - 1][j];
  const bool wide = -G_mid > kMaxHalfSpan || G_mid - G_last > kMaxHalfSpan;
  const bool slow = __syncthreads_or(wide);  // also orders the norm results above

  // Record rows, written straight to the workspace in the swizzled layout (8 consecutive channels
  // share a 16-byte piece): K̂, Q̂, K̃ (thread j owns channel j), γ; the fast path's factored tiles.
  uint8_t* rec = p.records + (int64_t(h) * p.n_chunks + chunk) * kRecordBytes;
  __nv_bfloat16* Khat = reinterpret_cast<__nv_bfloat16*>(rec + kOffKhat);
  __nv_bfloat16* Qhat = reinterpret_cast<__nv_bfloat16*>(rec + kOffQhat);
  __nv_bfloat16* Ktil = reinterpret_cast<__nv_bfloat16*>(rec + kOffKtil);
#pragma unroll 4
  for (int r = 0; r < kC; ++r) {
    const float kn = to_f32(s.k[r][j]) * s.inv_k[r], qn = to_f32(s.q[r][j]) * s.inv_q[r], Gr = s.g[r][j];
    const float e = fast_exp2(Gr);
    const int o = swz128(r, j);
    Khat[o] = __float2bfloat16_rn(kn * e);
    Qhat[o] = __float2bfloat16_rn(p.scale * qn * e);
    Ktil[o] = __float2bfloat16_rn(kn * fast_exp2(G_last - Gr));
    if (!slow) {
      const float up = fast_exp2(Gr - G_mid), down = fast_exp2(G_mid - Gr);
      s.tile[0][o] = __float2bfloat16_rn(kn * up);    // P
      s.tile[1][o] = __float2bfloat16_rn(kn * down);  // R
      s.tile[2][o] = __float2bfloat16_rn(qn * up);    // Pq
    }
  }
  reinterpret_cast<float*>(rec + kOffGamma)[j] = fast_exp2(G_last);
  __syncthreads();

  if (!slow) {
    if (warp == 0) warp_xyt(s.tile[0], s.tile[1], s.L, 0);
    if (warp == 1) warp_xyt(s.tile[2], s.tile[1], s.M, 0);
  } else {
    // Two rounds of two hierarchy levels: a k-factor tile and a q-factor tile per level.
#pragma unroll 1
    for (int round = 0; round < 2; ++round) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int level = 2 * round + half + 1, bs = 32 >> level;
#pragma unroll 4
        for (int r = 0; r < kC; ++r) {
          const int pr = (r / bs) * bs + bs / 2 - 1;  // last row of r's lower half-block
          const bool upper = r % bs >= bs / 2;
          const float d = s.g[r][j] - s.g[pr][j];
          const float e = fast_exp2(upper ? d : -d);  // <= 1 on both sides
          const int o = swz128(r, j);
          s.tile[2 * half][o] = __float2bfloat16_rn(to_f32(s.k[r][j]) * s.inv_k[r] * e);
          s.tile[2 * half + 1][o] = __float2bfloat16_rn(upper ? to_f32(s.q[r][j]) * s.inv_q[r] * e : 0.0f);
        }
      }
      __syncthreads();
      const int level = 2 * round + warp / 2 + 1;
      const __nv_bfloat16* k_tile = s.tile[2 * (warp / 2)];
      warp_xyt(warp % 2 == 0 ? k_tile : s.tile[2 * (warp / 2) + 1], k_tile, warp % 2 == 0 ? s.L : s.M, level);
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
      packed[e] = pack_bf16(i <= r ? p.scale * s.M[r][i] : 0.0f, i + 1 <= r ? p.scale * s.M[r][i + 1] : 0.0f);
    }
    *reinterpret_cast<uint4*>(rec + kOffM + swz16(r, i0) * 2) =
        make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
}

// ---- K2 ----------------------------------------------------------------------------------

constexpr int kStages = 3;

template <class T, int kWarps>
struct K2Stage {
  static constexpr int kVCols = 16 * kWarps;
  static constexpr int kVLd = kVCols + 16 / int(sizeof(T));
  alignas(128) uint8_t rec[kRecordBytes];  // one bulk copy of the chunk's record
  alignas(16) T V[kC][kVLd];
};

struct K2Params {
  const uint8_t* records;
  int64_t n_chunks;
  const void* v;
  int64_t v_stride;
  void* o;
  int64_t o_stride;
  float* pool;
  int64_t slot_stride;
  const int* seq_meta;  // [N][kSeqMetaInts]
  const int* ck_chunk;  // chunk index (within its sequence) after which to emit
  const int* ck_slot;
};

// Sᵀ fragment of this thread (16 n-tiles over the key dim) -> S[kd][v] at `dst` ([K, V] layout).
__device__ __forceinline__ void store_state(float* dst, const float (&St)[16][4], int vr0) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt) {
    const int kd = 8 * nt + 2 * t;
    dst[kd * kD + vr0] = St[nt][0];
    dst[(kd + 1) * kD + vr0] = St[nt][1];
    dst[kd * kD + vr0 + 8] = St[nt][2];
    dst[(kd + 1) * kD + vr0 + 8] = St[nt][3];
  }
}

template <class T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) kda_recurrence_kernel(K2Params p) {
  using Stage = K2Stage<T, kWarps>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  Stage* stages = reinterpret_cast<Stage*>(smem_raw);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem_raw + kStages * sizeof(Stage));

  const int n = blockIdx.x, h = blockIdx.y;
  const int v0 = blockIdx.z * Stage::kVCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int mat = lane / 8, rr = lane % 8;
  const int* meta = p.seq_meta + n * kSeqMetaInts;
  const int64_t row0 = meta[kRow0];
  const int len = meta[kLen], nch = meta[kNChunks];
  const int vr0 = v0 + 16 * warp + g;  // this thread's value rows: vr0 and vr0 + 8
  const int64_t head_off = int64_t(h) * kD * kD;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&bars[s], 1);
    fence_barrier_init();
  }

  float St[16][4];
  const int init = meta[kInitSlot];
  if (init >= 0) {
    const float* src = p.pool + int64_t(init) * p.slot_stride + head_off;
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const int kd = 8 * nt + 2 * t;
      St[nt][0] = src[kd * kD + vr0];
      St[nt][1] = src[(kd + 1) * kD + vr0];
      St[nt][2] = src[kd * kD + vr0 + 8];
      St[nt][3] = src[(kd + 1) * kD + vr0 + 8];
    }
  } else {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) St[nt][0] = St[nt][1] = St[nt][2] = St[nt][3] = 0.0f;
  }
  __syncthreads();  // barriers initialised

  // Loads of chunk c: the record (one bulk copy by thread 0) and this CTA's value tile (cp.async:
  // one or two 16-byte pieces per thread), zero-filled past the sequence's end.
  const uint8_t* rec0 = p.records + (int64_t(h) * p.n_chunks + meta[kChunk0]) * kRecordBytes;
  constexpr int kVPieces = kC * Stage::kVCols * int(sizeof(T)) / 16, kPerRow = kVPieces / kC;
  const T* vbase = static_cast<const T*>(p.v) + row0 * p.v_stride + int64_t(h) * kD + v0;
  auto issue = [&](int c) {
    Stage& st = stages[c % kStages];
    if (threadIdx.x == 0) {
      mbar_arrive_expect_tx(&bars[c % kStages], kRecordBytes);
      bulk_copy_to_shared(st.rec, rec0 + int64_t(c) * kRecordBytes, kRecordBytes, &bars[c % kStages]);
    }
    for (int i = threadIdx.x; i < kVPieces; i += blockDim.x) {
      const int r = i / kPerRow, col = (i % kPerRow) * (16 / int(sizeof(T)));
      const bool valid = c * kC + r < len;
      cp_async16(&st.V[r][col], valid ? vbase + (int64_t(c) * kC + r) * p.v_stride + col : vbase, valid);
    }
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nch) issue(s);
    cp_async_commit();
  }

  int ck = meta[kCk0];
  const int ck_end = meta[kCk1];
  T* out = static_cast<T*>(p.o) + row0 * p.o_stride + int64_t(h) * kD;
  for (int c = 0; c < nch; ++c) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // value tile c visible; stage (c - 1) % kStages is free again
    if (c + kStages - 1 < nch) issue(c + kStages - 1);
    cp_async_commit();
    mbar_wait(&bars[c % kStages], (c / kStages) & 1);
    const Stage& st = stages[c % kStages];
    const __nv_bfloat16* Kh = reinterpret_cast<const __nv_bfloat16*>(st.rec + kOffKhat);
    const __nv_bfloat16* Qh = reinterpret_cast<const __nv_bfloat16*>(st.rec + kOffQhat);
    const __nv_bfloat16* Kt = reinterpret_cast<const __nv_bfloat16*>(st.rec + kOffKtil);
    const __nv_bfloat16* Am = reinterpret_cast<const __nv_bfloat16*>(st.rec + kOffA);
    const __nv_bfloat16* Mm = reinterpret_cast<const __nv_bfloat16*>(st.rec + kOffM);
    const float* gamma = reinterpret_cast<const float*>(st.rec + kOffGamma);

    // Xᵀ and the first output term: Sᵀ K̂ᵀ and Sᵀ Q̂ᵀ (two interleaved accumulation chains each).
    float xa[2][2][4] = {}, oa[2][2][4] = {};
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const uint32_t a[4] = {pack_bf16(St[2 * ks][0], St[2 * ks][1]), pack_bf16(St[2 * ks][2], St[2 * ks][3]),
                             pack_bf16(St[2 * ks + 1][0], St[2 * ks + 1][1]),
                             pack_bf16(St[2 * ks + 1][2], St[2 * ks + 1][3])};
      uint32_t kb[4], qb[4];
      const int off = swz128((mat / 2) * 8 + rr, 16 * ks + (mat % 2) * 8);
      ldmatrix_x4(kb, Kh + off);
      ldmatrix_x4(qb, Qh + off);
      mma_16816(xa[ks & 1][0], a, kb[0], kb[1]);
      mma_16816(xa[ks & 1][1], a, kb[2], kb[3]);
      mma_16816(oa[ks & 1][0], a, qb[0], qb[1]);
      mma_16816(oa[ks & 1][1], a, qb[2], qb[3]);
    }
    // Xᵀ = Vᵀ − Sᵀ K̂ᵀ  (rows: value index, columns: token)
    float x[2][4];
    const int vl = 16 * warp + g;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int tok = 8 * nt + 2 * t;
      x[nt][0] = to_f32(st.V[tok][vl]) - (xa[0][nt][0] + xa[1][nt][0]);
      x[nt][1] = to_f32(st.V[tok + 1][vl]) - (xa[0][nt][1] + xa[1][nt][1]);
      x[nt][2] = to_f32(st.V[tok][vl + 8]) - (xa[0][nt][2] + xa[1][nt][2]);
      x[nt][3] = to_f32(st.V[tok + 1][vl + 8]) - (xa[0][nt][3] + xa[1][nt][3]);
    }
    // Ṽᵀ = Xᵀ Aᵀ
    const uint32_t xf[4] = {pack_bf16(x[0][0], x[0][1]), pack_bf16(x[0][2], x[0][3]),
                            pack_bf16(x[1][0], x[1][1]), pack_bf16(x[1][2], x[1][3])};
    uint32_t ab[4], mb[4];
    const int off16 = swz16((mat / 2) * 8 + rr, (mat % 2) * 8);
    ldmatrix_x4(ab, Am + off16);
    ldmatrix_x4(mb, Mm + off16);
    float vt[2][4] = {};
    mma_16816(vt[0], xf, ab[0], ab[1]);
    mma_16816(vt[1], xf, ab[2], ab[3]);
    const uint32_t vf[4] = {pack_bf16(vt[0][0], vt[0][1]), pack_bf16(vt[0][2], vt[0][3]),
                            pack_bf16(vt[1][0], vt[1][1]), pack_bf16(vt[1][2], vt[1][3])};
    // Oᵀ = Sᵀ Q̂ᵀ + Ṽᵀ Mᵀ
    float o[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] = oa[0][nt][e] + oa[1][nt][e];
    mma_16816(o[0], vf, mb[0], mb[1]);
    mma_16816(o[1], vf, mb[2], mb[3]);
    {
      const int valid = len - c * kC;
      T* rows = out + int64_t(c) * kC * p.o_stride;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int tok = 8 * nt + 2 * t + e;
          if (tok < valid) {
            T* row = rows + tok * p.o_stride;
            row[vr0] = from_f32<T>(o[nt][e]);
            row[vr0 + 8] = from_f32<T>(o[nt][2 + e]);
          }
        }
    }
    // Sᵀ ← Sᵀ Diag(γ) + Ṽᵀ K̃
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const float2 gm = *reinterpret_cast<const float2*>(&gamma[8 * nt + 2 * t]);
      St[nt][0] *= gm.x, St[nt][1] *= gm.y, St[nt][2] *= gm.x, St[nt][3] *= gm.y;
    }
#pragma unroll
    for (int np = 0; np < 8; ++np) {
      uint32_t kb[4];
      ldmatrix_x4_trans(kb, Kt + swz128((mat % 2) * 8 + rr, 8 * (2 * np + mat / 2)));
      mma_16816(St[2 * np], vf, kb[0], kb[1]);
      mma_16816(St[2 * np + 1], vf, kb[2], kb[3]);
    }
    while (ck < ck_end && p.ck_chunk[ck] == c) {
      store_state(p.pool + int64_t(p.ck_slot[ck]) * p.slot_stride + head_off, St, vr0);
      ++ck;
    }
  }
  cp_async_wait<0>();
  store_state(p.pool + int64_t(meta[kFinalSlot]) * p.slot_stride + head_off, St, vr0);
}

// K2 warps per CTA: env DS_KDA_K2_WARPS (2, 4 or 8), else 4 (measured on an H200 over H = 32..96:
// 2 and 4 within 2 %, 8 up to 35 % slower where it leaves SMs idle; docs/perf.md).
int k2_warps(int64_t n_seq_heads) {
  if (const char* e = std::getenv("DS_KDA_K2_WARPS")) {
    const int w = std::atoi(e);
    if (w == 2 || w == 4 || w == 8) return w;
  }
  static int sms = [] {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 132;
  }();
  for (int w : {8, 4})
    if (n_seq_heads * (8 / w) >= 2 * sms) return w;
  return 2;
}

template <class T, int kWarps>
void launch_k2(const K2Params& p, int N, int H, cudaStream_t stream) {
  const size_t smem = sizeof(K2Stage<T, kWarps>) * kStages + kStages * sizeof(uint64_t);
  check(cudaFuncSetAttribute(kda_recurrence_kernel<T, kWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(smem)),
        "kda_prefill: shared memory limit");
  const dim3 grid{unsigned(N), unsigned(H), unsigned(8 / kWarps)};
  kda_recurrence_kernel<T, kWarps><<<grid, kWarps * 32, smem, stream>>>(p);
  check_launch("kda_prefill recurrence kernel");
}

// DS_KDA_TIMING=1: events around the phases of each call, printed to stderr (diagnostics only).
struct PhaseTimer {
  bool on = std::getenv("DS_KDA_TIMING") != nullptr;
  cudaEvent_t ev[4] = {};
  int n = 0;
  void mark(cudaStream_t s) {
    if (!on) return;
    cudaEventCreate(&ev[n]);
    cudaEventRecord(ev[n++], s);
  }
  void report() {
    if (!on || n < 4) return;
    cudaEventSynchronize(ev[3]);
    float t[3];
    for (int i = 0; i < 3; ++i) cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
    std::fprintf(stderr, "kda_prefill timing: setup %.3f ms, prep %.3f ms, recurrence %.3f ms\n", t[0], t[1],
                 t[2]);
    for (int i = 0; i < n; ++i) cudaEventDestroy(ev[i]);
  }
};

template <class T>
void run_prefill(const KdaPrefillLaunch& a, cudaStream_t stream) {
  keep_pool_memory();
  PhaseTimer timer;
  timer.mark(stream);
  const int N = a.N, H = a.H;
  // Host metadata: chunk table, per-sequence table, checkpoint table — one upload.
  std::vector<int> chunk_rows, seq_meta(size_t(N) * kSeqMetaInts), ck_chunk, ck_slot;
  int ci = 0;
  for (int n = 0; n < N; ++n) {
    const int64_t r0 = a.cu_seqlens[n], len = a.cu_seqlens[n + 1] - r0;
    int* m = &seq_meta[size_t(n) * kSeqMetaInts];
    m[kRow0] = int(r0), m[kLen] = int(len), m[kChunk0] = int(chunk_rows.size() / 2);
    m[kNChunks] = int((len + kC - 1) / kC);
    m[kInitSlot] = a.initial_slot[n], m[kFinalSlot] = a.final_slot[n];
    for (int64_t c = 0; c < len; c += kC) {
      chunk_rows.push_back(int(r0 + c));
      chunk_rows.push_back(int(len - c < kC ? len - c : kC));
    }
    m[kCk0] = int(ck_chunk.size());
    for (; ci < a.n_checkpoints && a.ck_seq[ci] == n; ++ci) {
      ck_chunk.push_back(int((a.ck_after[ci] + kC - 1) / kC - 1));
      ck_slot.push_back(a.ck_slot[ci]);
    }
    m[kCk1] = int(ck_chunk.size());
  }
  const int64_t n_chunks = int64_t(chunk_rows.size() / 2);
  std::vector<int> blob;
  blob.reserve(chunk_rows.size() + seq_meta.size() + 2 * ck_chunk.size());
  blob.insert(blob.end(), chunk_rows.begin(), chunk_rows.end());
  blob.insert(blob.end(), seq_meta.begin(), seq_meta.end());
  blob.insert(blob.end(), ck_chunk.begin(), ck_chunk.end());
  blob.insert(blob.end(), ck_slot.begin(), ck_slot.end());
  int* d_blob = nullptr;
  uint8_t* d_records = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d_blob), blob.size() * sizeof(int) + 16, stream),
        "kda_prefill: metadata allocation");
  check(cudaMemcpyAsync(d_blob, blob.data(), blob.size() * sizeof(int), cudaMemcpyHostToDevice, stream),
        "kda_prefill: metadata upload");
  if (n_chunks > 0)
    check(cudaMallocAsync(reinterpret_cast<void**>(&d_records), size_t(H) * n_chunks * kRecordBytes, stream),
          "kda_prefill: workspace allocation");
  timer.mark(stream);
  const int* d_seq = d_blob + chunk_rows.size();
  const int* d_ck_chunk = d_seq + seq_meta.size();
  const int* d_ck_slot = d_ck_chunk + ck_chunk.size();

  if (n_chunks > 0) {
    const K1Params p1{a.q,
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
                      reinterpret_cast<const int2*>(d_blob),
                      d_records,
                      n_chunks};
    const dim3 grid{unsigned(n_chunks), unsigned(H)};
    const size_t smem = sizeof(K1Smem<T>);
    auto prep = a.safe_gate ? kda_prep_kernel<T, true> : kda_prep_kernel<T, false>;
    check(cudaFuncSetAttribute(prep, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
          "kda_prefill: prep shared memory limit");
    prep<<<grid, 128, smem, stream>>>(p1);
    check_launch("kda_prefill prep kernel");
  }
  timer.mark(stream);
  const K2Params p2{d_records, n_chunks,      a.v,   a.v_stride, a.o,      a.o_stride,
                    a.pool,    a.slot_stride, d_seq, d_ck_chunk, d_ck_slot};
  switch (k2_warps(int64_t(N) * H)) {
    case 8:
      launch_k2<T, 8>(p2, N, H, stream);
      break;
    case 4:
      launch_k2<T, 4>(p2, N, H, stream);
      break;
    default:
      launch_k2<T, 2>(p2, N, H, stream);
  }
  timer.mark(stream);
  timer.report();
  if (d_records) check(cudaFreeAsync(d_records, stream), "kda_prefill: workspace free");
  check(cudaFreeAsync(d_blob, stream), "kda_prefill: metadata free");
}

}  // namespace

void launch_kda_prefill(const KdaPrefillLaunch& l) {
  const cudaStream_t stream = static_cast<cudaStream_t>(l.stream);
  if (l.bf16)
    run_prefill<__nv_bfloat16>(l, stream);
  else
    run_prefill<float>(l, stream);
}

}  // namespace ds::cuda
