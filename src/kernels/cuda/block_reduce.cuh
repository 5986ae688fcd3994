// Internal to src/kernels/cuda: sum and max over a CTA of kThreads threads (a multiple of 32) with
// warp shuffles and kThreads / 32 floats of shared memory `red`. Every thread gets the result; the
// call ends with a barrier and may be repeated back to back with the same `red`.
#pragma once

#include <cuda_runtime.h>

namespace ds::cuda {

template <int kThreads, bool kMax = false>
__device__ __forceinline__ float block_reduce(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // `red` may still be read by a previous call
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) r = kMax ? fmaxf(r, red[w]) : r + red[w];
  return r;
}

}  // namespace ds::cuda
