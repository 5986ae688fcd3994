// CUDA side of kernels/memory.h: device memory from the default stream-ordered pool (kept for
// reuse, so that per-step scratch costs no cudaMalloc), pinned host memory, copies and fills on the
// default stream. Errors throw ds::Error naming the operation.
#pragma once

#include <cstdint>

namespace ds::cuda {

// Device memory from the pool, or from the scratch arena installed on this thread (scratch_arena.h).
void* alloc_device(int64_t bytes);
void free_device(void* p);
void* alloc_pinned(int64_t bytes);
void free_pinned(void* p);
void copy(void* dst, bool dst_device, const void* src, bool src_device, int64_t bytes);
void copy_2d(void* dst, int64_t dst_pitch, bool dst_device, const void* src, int64_t src_pitch,
             bool src_device, int64_t row_bytes, int64_t rows);
void zero(void* p, int64_t bytes);
void synchronize();
// Starts / stops the profiler's capture range (cudaProfilerStart / Stop).
void profiler_range(bool on);
// Keeps freed memory in the device's stream-ordered pool instead of returning it to the driver at
// every synchronisation (the default threshold 0 re-maps gigabytes per call). Once per process.
void keep_pool_memory();

}  // namespace ds::cuda
