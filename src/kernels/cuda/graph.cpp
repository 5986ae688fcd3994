#include "kernels/cuda/graph.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/scratch_arena.h"

namespace ds::cuda {
namespace {

// An instantiated graph and the scratch arena its recorded kernels use.
struct CapturedGraph {
  cudaGraphExec_t exec = nullptr;
  std::unique_ptr<ScratchArena> arena;
};

cudaGraph_t record(const std::function<void()>& body, ScratchArena* arena) {
  // Thread-local mode: other threads' unsafe calls (allocations, synchronous copies) stay legal.
  check(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal),
        "graph: begin capture");
  cudaGraph_t graph = nullptr;
  try {
    const ArenaScope scope(arena);
    body();
  } catch (...) {
    cudaStreamEndCapture(cudaStreamPerThread, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(cudaStreamPerThread, &graph), "graph: end capture");
  return graph;
}

// With DS_GRAPH_STATS set: one stderr line counting the graph's nodes by kind and its programmatic
// (PDL) edges.
void print_stats(cudaGraph_t graph, const ScratchArena& arena) {
  if (std::getenv("DS_GRAPH_STATS") == nullptr) return;
  size_t n = 0, e = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess ||
      cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e) != cudaSuccess)
    return;
  std::vector<cudaGraphNode_t> nodes(n), from(e), to(e);
  std::vector<cudaGraphEdgeData> data(e);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess ||
      cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &e) != cudaSuccess)
    return;
  int kernel = 0, alloc = 0, free = 0, copy = 0, other = 0, pdl = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    if (cudaGraphNodeGetType(node, &t) != cudaSuccess) continue;
    kernel += t == cudaGraphNodeTypeKernel;
    alloc += t == cudaGraphNodeTypeMemAlloc;
    free += t == cudaGraphNodeTypeMemFree;
    copy += t == cudaGraphNodeTypeMemcpy || t == cudaGraphNodeTypeMemset;
    other += t != cudaGraphNodeTypeKernel && t != cudaGraphNodeTypeMemAlloc &&
             t != cudaGraphNodeTypeMemFree && t != cudaGraphNodeTypeMemcpy && t != cudaGraphNodeTypeMemset;
  }
  for (size_t i = 0; i < e; ++i) pdl += data[i].type == cudaGraphDependencyTypeProgrammatic;
  std::fprintf(stderr,
               "graph: %zu nodes (%d kernels, %d allocs, %d frees, %d copies/fills, %d other), %zu edges "
               "(%d programmatic), scratch arena %.2f MiB\n",
               n, kernel, alloc, free, copy, other, e, pdl, double(arena.capacity_bytes()) / (1 << 20));
}

}  // namespace

void* capture_graph(const std::function<void()>& body) {
  // First recording with an empty arena measures the scratch the step needs (its allocations are
  // memory nodes); the second records against an arena of that size, so that none is left.
  // DS_GRAPH_ARENA=0 keeps the first (the memory nodes: for comparison).
  auto arena = std::make_unique<ScratchArena>(0);
  cudaGraph_t graph = record(body, arena.get());
  const char* env = std::getenv("DS_GRAPH_ARENA");
  if (arena->pooled_requests() > 0 && !(env != nullptr && std::string(env) == "0")) {
    const int64_t need = arena->high_water_bytes();
    cudaGraphDestroy(graph);
    arena = std::make_unique<ScratchArena>(need);
    graph = record(body, arena.get());
  }
  print_stats(graph, *arena);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(err, "graph: instantiate");
  return new CapturedGraph{exec, std::move(arena)};
}

void launch_graph(void* g) {
  check(cudaGraphLaunch(static_cast<CapturedGraph*>(g)->exec, cudaStreamPerThread), "graph: launch");
}

void destroy_graph(void* g) {
  auto* c = static_cast<CapturedGraph*>(g);
  cudaGraphExecDestroy(c->exec);
  delete c;
}

void* per_thread_stream() {
  return static_cast<void*>(cudaStreamPerThread);
}

}  // namespace ds::cuda
