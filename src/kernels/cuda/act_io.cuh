// Internal to src/kernels/cuda: f32 or bf16 activation elements read and written as f32.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace ds::cuda {

__device__ __forceinline__ float load_act(const float* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load_act(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store_act(float* p, int64_t i, float x) {
  p[i] = x;
}
__device__ __forceinline__ void store_act(__nv_bfloat16* p, int64_t i, float x) {
  p[i] = __float2bfloat16_rn(x);
}

}  // namespace ds::cuda
