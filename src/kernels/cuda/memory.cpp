#include "kernels/cuda/memory.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/scratch_arena.h"

namespace ds::cuda {
namespace {

cudaMemcpyKind kind(bool dst_device, bool src_device) {
  if (dst_device) return src_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
  return src_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
}

}  // namespace

void keep_pool_memory() {
  static const bool done = [] {
    int dev = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
      uint64_t threshold = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    }
    return true;
  }();
  (void)done;
}

void* alloc_device(int64_t bytes) {
  if (ScratchArena* a = thread_arena()) return a->alloc(bytes);  // a graph being recorded
  keep_pool_memory();
  void* p = nullptr;
  check(cudaMallocAsync(&p, size_t(bytes), cudaStreamPerThread), "device alloc");
  return p;
}

void free_device(void* p) {
  if (ScratchArena* a = thread_arena(); a != nullptr && a->release(p)) return;
  cudaFreeAsync(p, cudaStreamPerThread);  // never throws from a destructor
}

void* alloc_pinned(int64_t bytes) {
  void* p = nullptr;
  check(cudaMallocHost(&p, size_t(bytes)), "pinned host alloc");
  return p;
}

void free_pinned(void* p) {
  cudaFreeHost(p);
}

void copy(void* dst, bool dst_device, const void* src, bool src_device, int64_t bytes) {
  check(cudaMemcpy(dst, src, size_t(bytes), kind(dst_device, src_device)), "memcpy");
}

void copy_2d(void* dst, int64_t dst_pitch, bool dst_device, const void* src, int64_t src_pitch,
             bool src_device, int64_t row_bytes, int64_t rows) {
  check(cudaMemcpy2D(dst, size_t(dst_pitch), src, size_t(src_pitch), size_t(row_bytes), size_t(rows),
                     kind(dst_device, src_device)),
        "memcpy2d");
}

void zero(void* p, int64_t bytes) {
  check(cudaMemsetAsync(p, 0, size_t(bytes), cudaStreamPerThread), "memset");
}

void synchronize() {
  check(cudaDeviceSynchronize(), "device synchronize");
}

void profiler_range(bool on) {
  check(on ? cudaProfilerStart() : cudaProfilerStop(), "profiler range");
}

}  // namespace ds::cuda
