// Internal to src/kernels/cuda: programmatic dependent launch (PDL) for the decode step's chain of
// small kernels. A kernel started by launch_pdl may begin while the kernel before it on the stream
// is still finishing (its launch and first loads overlap that kernel's tail; the edge survives graph
// capture). Such a kernel must call pdl_wait() before it reads anything an earlier kernel wrote or
// writes anything an earlier kernel reads; before it, it may only read data no kernel writes (the
// weights). pdl_trigger() lets the next PDL kernel start launching once every CTA has called it (or
// exited). Kernels without the attribute, and kernels after them, run fully ordered as usual.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace ds::cuda {

__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;\n" :::);
}

template <class... KArgs, class... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = cudaStreamPerThread;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), "PDL kernel launch");
}

}  // namespace ds::cuda
