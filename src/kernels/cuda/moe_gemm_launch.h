// Internal to src/kernels: plain launch function of the grouped expert GEMM (kernels/moe_gemm.h), so
// that the .cu file needs no project headers. Device pointers; strides in elements. Default stream.
#pragma once

#include <cstdint>

namespace ds::cuda {

// Rows per M tile of the grouped GEMM; the tile list holds at most moe_gemm_max_tiles() entries.
inline constexpr int64_t kMoeGemmTileRows = 128;
inline int64_t moe_gemm_max_tiles(int64_t n_rows, int64_t E) {
  return (n_rows + kMoeGemmTileRows - 1) / kMoeGemmTileRows + (E < n_rows ? E : n_rows);
}

struct MoeGemmLaunch {
  const uint16_t* a;        // bf16 rows, stride lda
  int64_t lda;              //
  const int32_t* a_rows;    // [n_rows]: grouped row r reads a row a_rows[r]; nullptr: row r
  const void* const* ptrs;  // bf16 [N, K] matrix of expert e at ptrs[b_first * E + e] (glu: up at + E)
  // MXFP4 experts (else nullptr): E8M0 u8 [N, K/32] beside ptrs' codes u8 [N, K/2]
  const void* const* scales = nullptr;
  int64_t b_first;    // 0: gate (glu) ; 2: down
  int64_t E, N, K;    // N output columns (glu: intermediate), K inner
  bool glu;           // out bf16 act(A·gateᵀ, A·upᵀ); else out f32 A·Bᵀ
  bool situ = false;  // act: SiTU-GLU (beta, linear_beta); else silu(g)·u
  float beta = 0.0f, linear_beta = 0.0f;
  const int32_t* offsets;  // [E + 1] grouped row offsets of the experts
  int64_t n_rows;
  int32_t* tiles;  // scratch [1 + 2 * moe_gemm_max_tiles(n_rows, E)]
  void* out;       // [n_rows, N], stride ldo
  int64_t ldo;
  bool wgmma = false;  // the warpgroup-MMA kernel (moe_gemm_wgmma.cu) where moe_gemm_wgmma_fits
};
// One tile-list kernel (expert and first row of every 128-row tile), then one GEMM launch over the
// tiles: bf16 mma.sync m16n8k16 with f32 accumulators, 128×128 CTA tiles in k steps of 64, 3-stage cp.async.
// MXFP4 experts: each k step's weight tile is loaded as codes and scales into registers one step
// ahead and dequantised to bf16 (exactly: E2M1 × E8M0 fits bf16) into shared memory. K % 32 == 0.
void launch_moe_gemm(const MoeGemmLaunch& l);

// The same products on Hopper's warpgroup MMA (moe_gemm_wgmma.cu): bf16 experts with K % 64 == 0.
// launch_moe_gemm takes it when l.wgmma is set and it fits, after building the tile list.
bool moe_gemm_wgmma_fits(const MoeGemmLaunch& l);
void launch_moe_gemm_wgmma(const MoeGemmLaunch& l, int64_t max_tiles);

}  // namespace ds::cuda
