// In-graph attribution without a timeline tool (pdl.cuh): env DS_ABLATE lists substrings of kernel
// names; a programmatic launch of a kernel whose (mangled) name holds one of them launches a kernel that
// only waits and triggers, over the same grid and block, so the step keeps its launches and its PDL chain
// and loses only that kernel's work. The step time minus the ablated step time is the class's cost
// inside the graph. An item starting with '-' skips the launch altogether (its launch and chain latency
// go too: noop minus skip is what the launch itself costs). Outputs of an ablated kernel are left as they
// were: never ablate a kernel whose output indexes memory (the MoE route's expert ids).
#include <cuda_runtime.h>

#include <cstdlib>
#include <string_view>

#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

__global__ void pdl_noop_kernel() {
  pdl_wait();
  pdl_trigger();
}

}  // namespace

Ablation pdl_ablation(const void* kernel) {
  const char* env = std::getenv("DS_ABLATE");
  if (env == nullptr || *env == '\0') return Ablation::None;
  const char* name = nullptr;
  if (cudaFuncGetName(&name, kernel) != cudaSuccess || name == nullptr) return Ablation::None;
  const std::string_view n(name);
  std::string_view list(env);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    const bool skip = !item.empty() && item[0] == '-';
    if (skip) item.remove_prefix(1);
    if (!item.empty() && n.find(item) != std::string_view::npos)
      return skip ? Ablation::Skip : Ablation::Noop;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return Ablation::None;
}

bool pdl_ablated(const void* kernel, dim3 grid, dim3 block, cudaStream_t stream) {
  const Ablation a = pdl_ablation(kernel);
  if (a == Ablation::Noop) launch_pdl_noop(grid, block, stream);
  return a != Ablation::None;
}

void launch_pdl_noop(dim3 grid, dim3 block, cudaStream_t stream) {
  launch_pdl_on(stream, "PDL no-op launch (DS_ABLATE)", pdl_noop_kernel, grid, block, 0);
}

}  // namespace ds::cuda
