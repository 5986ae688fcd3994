// Internal to src/kernels/cuda: the last step of the token-major down kernels (moe_token.cu,
// moe_token_mxfp4.cu): the warp's sum for output row d of token t, written or added by lane 0.
#pragma once

#include "kernels/cuda/moe_token_launch.h"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {

__device__ __forceinline__ void token_store_row(const TokenGluLaunch& l, int64_t t, int64_t d, float acc) {
  const float sum = warp_sum(acc);
  if (threadIdx.x % 32 == 0) {
    float* y = l.y + t * l.y_stride + d;
    *y = l.accumulate ? *y + sum : sum;
  }
}

}  // namespace ds::cuda
