#include "kernels/cuda/graph.h"

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"

namespace ds::cuda {

void* capture_graph(const std::function<void()>& body) {
  // Thread-local mode: other threads' unsafe calls (allocations, synchronous copies) stay legal.
  check(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal),
        "graph: begin capture");
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(cudaStreamPerThread, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(cudaStreamPerThread, &graph), "graph: end capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "graph: instantiate");
  return exec;
}

void launch_graph(void* exec) {
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), cudaStreamPerThread), "graph: launch");
}

void destroy_graph(void* exec) {
  cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}

void* per_thread_stream() {
  return static_cast<void*>(cudaStreamPerThread);
}

}  // namespace ds::cuda
