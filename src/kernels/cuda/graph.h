// Internal to src/kernels: CUDA graph capture of the calling thread's default stream (kernels/graph.h).
#pragma once

#include <functional>

namespace ds::cuda {

// An instantiated graph with its scratch arena (scratch_arena.h): the device memory the body
// allocates comes from the arena, so that the graph holds kernel and copy nodes only.
void* capture_graph(const std::function<void()>& body);
void launch_graph(void* exec);
void destroy_graph(void* exec);
void* per_thread_stream();  // cudaStreamPerThread

}  // namespace ds::cuda
