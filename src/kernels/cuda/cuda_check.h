// CUDA error handling for the CUDA kernels' host code: every runtime call and every launch is
// checked, and a failure throws ds::Error naming the operation and the CUDA error string.
// (The formatting lives in a .cpp: nvcc does not compile fmt's compile-time format checks.)
#pragma once

#include <cuda_runtime_api.h>

namespace ds::cuda {

// Throws ds::Error("<what>: CUDA error <name>: <string>") unless err == cudaSuccess.
void check(cudaError_t err, const char* what);

// check(cudaGetLastError(), what): call right after a kernel launch.
void check_launch(const char* what);

// Throws ds::Error(msg) unless ok (host-side argument checks inside .cu files).
void require(bool ok, const char* msg);

// Number of CUDA devices usable by this process (0 when there is no driver or no GPU; never throws).
int device_count();

// Multiprocessors of the current device, asked once per process (the first use may be inside a graph
// capture, where the attribute query is still allowed but later launches must not wait on it).
int multiprocessor_count();

}  // namespace ds::cuda
