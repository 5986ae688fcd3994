// Internal to src/kernels/cuda: the tile of a grouped expert GEMM CTA (moe_gemm.cu, moe_gemm_wgmma.cu),
// read from the device-built tile list: blockIdx.y names the row tile, blockIdx.x the column tile.
#pragma once

#include "kernels/cuda/moe_gemm_launch.h"

namespace ds::cuda {

struct MoeGemmTile {
  int e;      // expert
  int m0;     // first grouped row
  int m_end;  // one past the tile's last row of the expert
  int n0;     // first output column
};

// False when the CTA's row tile is past the list's end (the grid is sized for the most tiles).
__device__ __forceinline__ bool moe_gemm_tile(const MoeGemmLaunch& l, int cols_per_cta, MoeGemmTile& t) {
  const int tile = blockIdx.y;
  if (tile >= l.tiles[0]) return false;
  t.e = l.tiles[1 + 2 * tile], t.m0 = l.tiles[2 + 2 * tile];
  t.m_end = min(l.offsets[t.e + 1], t.m0 + int(kMoeGemmTileRows));
  t.n0 = blockIdx.x * cols_per_cta;
  return true;
}

}  // namespace ds::cuda
