// Internal to src/kernels: CUDA graph capture of the calling thread's default stream (kernels/graph.h).
#pragma once

#include <functional>

namespace ds::cuda {

void* capture_graph(const std::function<void()>& body);  // an instantiated cudaGraphExec_t
void launch_graph(void* exec);
void destroy_graph(void* exec);
void* per_thread_stream();  // cudaStreamPerThread

}  // namespace ds::cuda
