// Internal to src/kernels/cuda: what the KDA prefill's prep kernel (kda_prefill_prep.cu) and its
// recurrence kernel (kda_prefill.cu) share — the layout of the per-(head, chunk) record, the
// swizzled tile layouts, element conversions, and the prep kernel's launch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kda_launch.h"
#include "kernels/cuda/kda_prefill_plan.h"

namespace ds::cuda {
namespace kda_prefill_detail {

constexpr int kD = 128;  // K = V
constexpr int kC = 16;   // chunk

// Record of one (head, chunk), bytes.
constexpr int kOffKhat = 0, kOffQhat = 4096, kOffKtil = 8192, kOffA = 12288, kOffM = 12800, kOffGamma = 13312;
constexpr int kRecordBytes = 13824;

static_assert(kC == kKdaChunkTokens);

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

}  // namespace kda_prefill_detail

// Sets a prefill kernel's dynamic shared-memory limit (smem bytes) and its carveout preference (the
// largest shared memory, or the driver's choice), loads it (under lazy module loading a kernel is loaded
// at its first use, and a load can wait for the kernels running on the device) and returns its
// attributes, with maxDynamicSharedSizeBytes = smem.
inline cudaFuncAttributes prepare_prefill_kernel(const void* kernel, int smem, bool max_carveout) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
        "kda_prefill: shared memory limit");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             max_carveout ? cudaSharedmemCarveoutMaxShared : cudaSharedmemCarveoutDefault),
        "kda_prefill: carveout");
  cudaFuncAttributes attr{};
  check(cudaFuncGetAttributes(&attr, kernel), "kda_prefill: kernel attributes");
  attr.maxDynamicSharedSizeBytes = smem;
  return attr;
}

// The chained form's window counters (kda_prefill.cu): int32 [H][n_windows], zero before the launch;
// the prep kernel adds each record it has written to its (head, chunk >> win_shift) counter and
// launches its CTAs heads fastest, so that windows complete in chunk order. win_count null: neither.
struct KdaPrepChain {
  int* win_count = nullptr;
  int win_shift = 0;
  int64_t n_windows = 0;
};

// Prep kernel over chunks [chunk0, chunk0 + count) of the call's chunk table (device, {first row,
// valid rows} per chunk): writes their records into `records` [H][n_chunks][kRecordBytes].
template <class T>
void launch_kda_prep(const KdaPrefillLaunch& a, const int2* chunk_rows, uint8_t* records, int64_t n_chunks,
                     int64_t chunk0, int64_t count, cudaStream_t stream, const KdaPrepChain& chain = {});
// prepare_prefill_kernel for the prep kernel that launch_kda_prep would run for `a`.
template <class T>
cudaFuncAttributes prepare_kda_prep(const KdaPrefillLaunch& a, bool max_carveout);

}  // namespace ds::cuda
