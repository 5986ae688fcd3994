// Internal to src/kernels/cuda: programmatic dependent launch (PDL) for the decode step's chain of
// small kernels. A kernel started by launch_pdl may begin while the kernel before it on the stream
// is still finishing (its launch and first loads overlap that kernel's tail; the edge survives graph
// capture). Such a kernel must call pdl_wait() before it reads anything an earlier kernel wrote or
// writes anything an earlier kernel reads; before it, it may only read data no kernel of the step
// writes (the weights, the step's index arrays copied in before its first kernel). pdl_wait() returns
// once the kernel before has completed and its writes are visible, which it does only after its own
// wait: so it orders this kernel after every earlier one.
// pdl_trigger() lets the next PDL kernel start launching once every CTA has called it (or exited).
// The decode kernels call it as soon as their own pdl_wait() has passed (the next kernel still waits
// for this one to complete before it touches shared data), so its launch and prologue overlap all of
// this kernel's work. Contract the kernels rely on: none triggers before its wait, except where the
// kernel after it reads nothing but weights before its own wait (kda_decode_cols.cu); so a kernel
// that starts has every kernel two launches back complete, and may read their outputs before its own
// wait through L2 (ld.global.cg: no stale L1 line) — the token-major down kernel's expert ids.
// Kernels without the attribute, and kernels after them, run fully ordered as usual.
// Env DS_ABLATE (pdl_ablate.cu): the launches of the named kernels become no-ops that keep the chain.
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

// Env DS_ABLATE (comma-separated substrings of kernel names, '-' first: skip) names `kernel`: Noop, the
// caller launches launch_pdl_noop over the same grid and block instead; Skip, it launches nothing.
enum class Ablation { None, Noop, Skip };
Ablation pdl_ablation(const void* kernel);
void launch_pdl_noop(dim3 grid, dim3 block, cudaStream_t stream);
// pdl_ablation's answer acted on: true when the caller must not launch `kernel` (a no-op was launched
// in its place, or nothing).
bool pdl_ablated(const void* kernel, dim3 grid, dim3 block, cudaStream_t stream);

// The programmatic launch itself, on `stream`, without the DS_ABLATE check; `what` names a failed launch.
template <class... KArgs, class... Args>
void launch_pdl_on(cudaStream_t stream, const char* what, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                   size_t smem, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...), what);
}

template <class... KArgs, class... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, Args&&... args) {
  if (pdl_ablated(reinterpret_cast<const void*>(kernel), grid, block, cudaStreamPerThread)) return;
  launch_pdl_on(cudaStreamPerThread, "PDL kernel launch", kernel, grid, block, smem,
                std::forward<Args>(args)...);
}

}  // namespace ds::cuda
