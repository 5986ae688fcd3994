// Internal to src/kernels/cuda: 16-byte loads of 8 consecutive weights or activations as f32, and
// the warp sum, for the weight-streaming kernels (grouped and token-major expert GLU, few-row linear).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace ds::cuda {

__device__ __forceinline__ void bf16x8_to_f32(const uint4& u, float* w) {
  const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float2 f = __bfloat1622float2(b[q]);
    w[2 * q] = f.x, w[2 * q + 1] = f.y;
  }
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float* w) {
  bf16x8_to_f32(*reinterpret_cast<const uint4*>(p), w);
}
__device__ __forceinline__ void load8(const float* p, float* w) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}

// The same for weights streamed once: read-only, no L1 allocation.
__device__ __forceinline__ void load8_stream(const __nv_bfloat16* p, float* w) {
  uint4 u;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
      : "l"(p));
  bf16x8_to_f32(u, w);
}
__device__ __forceinline__ void load8_stream(const float* p, float* w) {
  load8(p, w);
}

// 8 consecutive weights of one row held as loaded (one 16-byte load for bf16 that skips L1, two for
// f32), so that a kernel can issue several chunks' loads before it converts and uses any of them.
template <class W>
struct Chunk;
template <>
struct Chunk<__nv_bfloat16> {
  uint4 u;
  __device__ __forceinline__ void load(const __nv_bfloat16* p) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
                 : "l"(p));
  }
  __device__ __forceinline__ void zero() { u = make_uint4(0, 0, 0, 0); }
  __device__ __forceinline__ void get(float* w) const { bf16x8_to_f32(u, w); }
};
template <>
struct Chunk<float> {
  float4 a, b;
  __device__ __forceinline__ void load(const float* p) {
    a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  }
  __device__ __forceinline__ void zero() { a = b = make_float4(0, 0, 0, 0); }
  __device__ __forceinline__ void get(float* w) const {
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
  }
};

// mma.cuh's cp_async_wait<N> for a thread that reads back only what it copied itself (cp_async16 /
// cp_async_commit, no barrier after the wait): the memory clobber keeps the thread's shared-memory reads
// after the wait, which a following __syncthreads otherwise does.
template <int kN>
__device__ __forceinline__ void cp_async_wait_own() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kN) : "memory");
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace ds::cuda
