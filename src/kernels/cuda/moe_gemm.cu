// The grouped expert GEMM of a prefill (kernels/moe_gemm.h): every active expert's product over its
// grouped rows in one launch. A tile list (expert, first row) of 128-row tiles is built on the device
// from the group offsets, so no host round trip; each CTA computes one 128-row tile against 128 weight
// rows (glu: 64 gate + the same 64 up rows, so the SiLU-GLU is formed in registers and only the bf16
// product is written). Tiling measured on the H200 (bench_gpu_model --moe-gemm, Kimi-Linear experts,
// 8192 tokens): 4 warps of 64×64 outputs with k steps of 64 in 3 stages, 3.26 ms for both GEMMs, against
// 3.65 ms for 64×64 warps with k steps of 32 in 4 stages and 3.69 ms for 8 warps of 64×32; skipping the
// fragments of a partial tile's empty rows made every tiling slower (3.51, 4.14, 4.17 ms).
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/expert_act.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/moe_gemm_launch.h"
#include "kernels/cuda/moe_gemm_tile.cuh"
#include "kernels/cuda/mxfp4.cuh"

namespace ds::cuda {
namespace {

constexpr int kBM = int(kMoeGemmTileRows), kBN = 128, kBK = 64, kStages = 3;
constexpr int kWN = 64;  // output columns per warp: (kBM / 64) × (kBN / kWN) warps of 64 × kWN outputs
constexpr int kLds =
    kBK + 8;  // bf16 per shared row: 144 bytes, so the 8 rows of an ldmatrix hit distinct banks
constexpr int kThreads = 32 * (kBM / 64) * (kBN / kWN);
constexpr size_t kSmemBytes = size_t(kStages) * (kBM + kBN) * kLds * 2;

// tiles[0] = number of tiles; tile i: expert tiles[1 + 2i], first grouped row tiles[2 + 2i].
__global__ void tile_list_kernel(const int32_t* __restrict__ off, int E, int32_t* __restrict__ tiles) {
  extern __shared__ int32_t first[];  // [E + 1]: first tile of each expert
  for (int e = threadIdx.x; e < E; e += blockDim.x) first[e + 1] = (off[e + 1] - off[e] + kBM - 1) / kBM;
  __syncthreads();
  if (threadIdx.x == 0) {
    first[0] = 0;
    for (int e = 0; e < E; ++e) first[e + 1] += first[e];
    tiles[0] = first[E];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x)
    for (int i = first[e]; i < first[e + 1]; ++i) {
      tiles[1 + 2 * i] = e;
      tiles[2 + 2 * i] = off[e] + (i - first[e]) * kBM;
    }
}

__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + __expf(-x));
}

// Each warp: 64 × kWN outputs, 4 m16 × kNI n8 mma tiles (every A fragment feeds kNI products). glu: a
// warp's n8 tiles 0 .. kNI/2 - 1 are gate rows of its kWN/2 output columns, the rest the up rows of the
// same columns. Two CTAs per SM (registers and shared memory). kMx: MXFP4 weights, each k step's
// weight tile fetched into registers (a 16-byte load of 32 codes and one scale byte per chunk) one
// step ahead of its use and dequantised into shared memory after the step's products.
template <bool kGlu, bool kMx>
__global__ void __launch_bounds__(kThreads, 2) moe_gemm_kernel(const MoeGemmLaunch l) {
  constexpr int kWarpsN = kBN / kWN, kNI = kWN / 8, kRowChunks = kBK / 8;
  constexpr int kChunks = kBM * kBK / 8 / kThreads;  // 16-byte chunks of A (and of B) per thread and stage
  constexpr int kMxBlocks = kBK / 32, kMxChunks = kBN * kMxBlocks / kThreads;  // MXFP4 blocks of B
  MoeGemmTile tl;
  if (!moe_gemm_tile(l, kGlu ? kBN / 2 : kBN, tl)) return;
  const int e = tl.e, m0 = tl.m0, m_end = tl.m_end, n0 = tl.n0;
  const int N = int(l.N), K = int(l.K), E = int(l.E);
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* As = smem;                         // [kStages][kBM][kLds]
  uint16_t* Bs = smem + kStages * kBM * kLds;  // [kStages][kBN][kLds]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp / kWarpsN, wn = warp % kWarpsN;

  // Chunk c = tid + kThreads i of a stage is row c / kRowChunks, columns (c % kRowChunks) * 8 .. + 8.
  const uint16_t* a_src[kChunks];
  const uint16_t* b_src[kChunks];
  bool a_ok[kChunks], b_ok[kChunks];
  int row_of[kChunks], col_of[kChunks];
  const auto* gate = static_cast<const uint16_t*>(l.ptrs[l.b_first * E + e]);
  const auto* up = kGlu ? static_cast<const uint16_t*>(l.ptrs[(l.b_first + 1) * E + e]) : gate;
  // The weight row of B tile row r and its matrix (glu: gate rows, then the same up rows).
  auto b_row = [&](int r, int& wrow) {
    if (kGlu) {
      wrow = n0 + (r & (kBN / 2 - 1));
      return r < kBN / 2 ? 0 : 1;
    }
    wrow = n0 + r;
    return 0;
  };
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = tid + kThreads * i, r = c / kRowChunks;
    row_of[i] = r, col_of[i] = (c % kRowChunks) * 8;
    const int gr = m0 + r;
    a_ok[i] = gr < m_end;
    const int64_t src_row = a_ok[i] ? (l.a_rows ? l.a_rows[gr] : gr) : 0;
    a_src[i] = l.a + src_row * l.lda + col_of[i];
    if (!kMx) {
      int wrow;
      const uint16_t* w = b_row(r, wrow) == 0 ? gate : up;
      b_ok[i] = wrow < N;
      b_src[i] = w + int64_t(b_ok[i] ? wrow : 0) * K + col_of[i];
    }
  }
  // MXFP4 chunk i: B tile row mx_row[i], inputs mx_col[i] .. + 32 of the k step.
  const uint8_t* mx_codes[kMx ? kMxChunks : 1];
  const uint8_t* mx_scale[kMx ? kMxChunks : 1];
  int mx_row[kMx ? kMxChunks : 1], mx_col[kMx ? kMxChunks : 1];
  bool mx_ok[kMx ? kMxChunks : 1];
  uint4 mx_c[kMx ? kMxChunks : 1];
  uint32_t mx_s[kMx ? kMxChunks : 1];
  if (kMx) {
#pragma unroll
    for (int i = 0; i < kMxChunks; ++i) {
      const int c = tid + kThreads * i, r = c / kMxBlocks;
      mx_row[i] = r, mx_col[i] = (c % kMxBlocks) * 32;
      int wrow;
      const int m = b_row(r, wrow);
      mx_ok[i] = wrow < N;
      const int64_t row = mx_ok[i] ? wrow : 0, mat = (l.b_first + m) * E + e;
      mx_codes[i] = static_cast<const uint8_t*>(l.ptrs[mat]) + row * (K / 2) + mx_col[i] / 2;
      mx_scale[i] = static_cast<const uint8_t*>(l.scales[mat]) + row * (K / 32) + mx_col[i] / 32;
    }
  }
  auto mx_fetch = [&](int kt) {
    const int k0 = kt * kBK;
#pragma unroll
    for (int i = 0; i < kMxChunks; ++i) {
      if (mx_ok[i] && k0 + mx_col[i] < K) {
        mx_c[i] = *reinterpret_cast<const uint4*>(mx_codes[i] + k0 / 2);
        mx_s[i] = mx_scale[i][k0 / 32];
      } else {
        mx_c[i] = make_uint4(0, 0, 0, 0), mx_s[i] = 127;  // zeros
      }
    }
  };
  auto mx_store = [&](int stage) {
#pragma unroll
    for (int i = 0; i < kMxChunks; ++i) {
      const float s = e8m0_value(mx_s[i]);
      const uint32_t w[4] = {mx_c[i].x, mx_c[i].y, mx_c[i].z, mx_c[i].w};
      uint16_t* bd = Bs + (stage * kBN + mx_row[i]) * kLds + mx_col[i];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint32_t o[4];
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const __nv_bfloat162 v = __floats2bfloat162_rn(e2m1_value(mxfp4_code(w[q], 2 * p)) * s,
                                                         e2m1_value(mxfp4_code(w[q], 2 * p + 1)) * s);
          o[p] = *reinterpret_cast<const uint32_t*>(&v);
        }
        *reinterpret_cast<uint4*>(bd + 8 * q) = make_uint4(o[0], o[1], o[2], o[3]);
      }
    }
  };
  auto load_stage = [&](int stage, int kt) {
    const int k0 = kt * kBK;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const bool kin = k0 + col_of[i] < K;
      uint16_t* ad = As + (stage * kBM + row_of[i]) * kLds + col_of[i];
      uint16_t* bd = Bs + (stage * kBN + row_of[i]) * kLds + col_of[i];
      cp_async16(ad, a_ok[i] && kin ? a_src[i] + k0 : l.a, a_ok[i] && kin);
      if (!kMx) cp_async16(bd, b_ok[i] && kin ? b_src[i] + k0 : gate, b_ok[i] && kin);
    }
  };

  float acc[4][kNI][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[mi][ni][j] = 0.0f;

  const int KT = (K + kBK - 1) / kBK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) {
      load_stage(s, s);
      if (kMx) mx_fetch(s), mx_store(s);
    }
    cp_async_commit();
  }
  // ldmatrix source rows of this lane: A (row lane % 16, column (lane / 16) * 8) of each m16 tile;
  // B (n (lane / 16) * 8 + lane % 8, k ((lane / 8) % 2) * 8) of each pair of n8 tiles.
  const int a_r = wm * 64 + (lane & 15), a_c = (lane >> 4) * 8;
  const int b_n = (lane >> 4) * 8 + (lane & 7), b_k = ((lane >> 3) & 1) * 8;
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    const bool ahead = kt + kStages - 1 < KT;
    if (ahead) load_stage((kt + kStages - 1) % kStages, kt + kStages - 1);
    cp_async_commit();
    if (kMx && ahead) mx_fetch(kt + kStages - 1);
    const uint16_t* as = As + (kt % kStages) * kBM * kLds;
    const uint16_t* bs = Bs + (kt % kStages) * kBN * kLds;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t af[4][4], bf[kNI][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) ldmatrix_x4(af[mi], as + (a_r + mi * 16) * kLds + kk + a_c);
#pragma unroll
      for (int p = 0; p < kNI / 2; ++p) {
        constexpr int kHalf = kNI / 4;  // glu: pairs of gate n8 tiles (then as many of up)
        const int rb =
            kGlu ? (p < kHalf ? wn * (kWN / 2) + p * 16 : kBN / 2 + wn * (kWN / 2) + (p - kHalf) * 16)
                 : wn * kWN + p * 16;
        uint32_t r[4];
        ldmatrix_x4(r, bs + (rb + b_n) * kLds + kk + b_k);
        bf[2 * p][0] = r[0], bf[2 * p][1] = r[1], bf[2 * p + 1][0] = r[2], bf[2 * p + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) mma_16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
    // The stage written here was last read in step kt - 1, which every thread finished before the
    // barrier above; step kt + 1's barrier publishes it.
    if (kMx && ahead) mx_store((kt + kStages - 1) % kStages);
  }
  cp_async_wait<0>();

  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + wm * 64 + mi * 16 + g + half * 8;
      if (row >= m_end) continue;
      if (kGlu) {
        auto* out = static_cast<__nv_bfloat16*>(l.out) + int64_t(row) * l.ldo;
#pragma unroll
        for (int ni = 0; ni < kNI / 2; ++ni) {
          const int col = n0 + wn * (kWN / 2) + ni * 8 + 2 * t;
          if (col >= N) continue;
          const float* gv = acc[mi][ni] + 2 * half;
          const float* uv = acc[mi][ni + kNI / 2] + 2 * half;
          const float h0 = l.situ ? situ_glu(gv[0], uv[0], l.beta, l.linear_beta) : silu(gv[0]) * uv[0];
          const float h1 = l.situ ? situ_glu(gv[1], uv[1], l.beta, l.linear_beta) : silu(gv[1]) * uv[1];
          *reinterpret_cast<__nv_bfloat162*>(out + col) = __floats2bfloat162_rn(h0, h1);
        }
      } else {
        float* out = static_cast<float*>(l.out) + int64_t(row) * l.ldo;
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          const int col = n0 + wn * kWN + ni * 8 + 2 * t;
          if (col >= N) continue;
          const float* v = acc[mi][ni] + 2 * half;
          *reinterpret_cast<float2*>(out + col) = make_float2(v[0], v[1]);
        }
      }
    }
}

}  // namespace

void launch_moe_gemm(const MoeGemmLaunch& l) {
  require(l.K % 8 == 0 && l.N % 8 == 0 && l.lda % 8 == 0 && l.ldo % 2 == 0 && l.E <= 16384 &&
              (l.scales == nullptr || l.K % 32 == 0),
          "moe_gemm (CUDA): K, N and the A stride must be multiples of 8 (MXFP4: K of 32), E <= 16384");
  if (l.n_rows == 0) return;
  tile_list_kernel<<<1, 256, size_t(l.E + 1) * 4>>>(l.offsets, int(l.E), l.tiles);
  check_launch("moe gemm tile list kernel");
  const int64_t max_tiles = moe_gemm_max_tiles(l.n_rows, l.E);
  require(max_tiles <= 65535, "moe_gemm (CUDA): too many row tiles");
  if (l.wgmma && moe_gemm_wgmma_fits(l)) return launch_moe_gemm_wgmma(l, max_tiles);
  const int64_t bn = l.glu ? kBN / 2 : kBN;
  const dim3 grid(unsigned((l.N + bn - 1) / bn), unsigned(max_tiles));
  const bool mx = l.scales != nullptr;
  const auto kernel = l.glu ? (mx ? moe_gemm_kernel<true, true> : moe_gemm_kernel<true, false>)
                            : (mx ? moe_gemm_kernel<false, true> : moe_gemm_kernel<false, false>);
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes)),
        "moe gemm smem attribute");
  kernel<<<grid, kThreads, kSmemBytes>>>(l);
  check_launch("moe gemm kernel");
}

}  // namespace ds::cuda
