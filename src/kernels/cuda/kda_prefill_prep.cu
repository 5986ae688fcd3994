// KDA chunked prefill, kernel K1 "prep" (token-parallel; the two-kernel design and the record are
// described in kda_prefill.cu). Per (chunk, head): L2 norms of q and k, the decay gate and its
// cumulative sum, β, and the record K̂, Q̂, K̃, A = (I + L)⁻¹ Diag(β), M, γ, with the pair sums of L
// and M on tensor cores (factored around the chunk's middle row, or hierarchically when the gate
// decays too steeply for that).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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
  int64_t chunk0;  // this launch's chunks: chunk0 + blockIdx.x
};

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
  const int64_t chunk = p.chunk0 + blockIdx.x;
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

}  // namespace

template <class T>
void launch_kda_prep(const KdaPrefillLaunch& a, const int2* chunk_rows, uint8_t* records, int64_t n_chunks,
                     int64_t chunk0, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  const K1Params p{a.q,     a.k,       a.f,           a.b,     a.q_stride, a.k_stride, a.f_stride, a.b_stride,
                   a.a_log, a.dt_bias, a.lower_bound, a.scale, chunk_rows, records,    n_chunks,   chunk0};
  const dim3 grid{unsigned(count), unsigned(a.H)};
  const size_t smem = sizeof(K1Smem<T>);
  auto prep = a.safe_gate ? kda_prep_kernel<T, true> : kda_prep_kernel<T, false>;
  check(cudaFuncSetAttribute(prep, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
        "kda_prefill: prep shared memory limit");
  prep<<<grid, 128, smem, stream>>>(p);
  check_launch("kda_prefill prep kernel");
}

template void launch_kda_prep<float>(const KdaPrefillLaunch&, const int2*, uint8_t*, int64_t, int64_t,
                                     int64_t, cudaStream_t);
template void launch_kda_prep<__nv_bfloat16>(const KdaPrefillLaunch&, const int2*, uint8_t*, int64_t, int64_t,
                                             int64_t, cudaStream_t);

}  // namespace ds::cuda
