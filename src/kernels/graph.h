// StepGraph: a recorded sequence of device work, replayed as one launch (one interface for every
// device). CUDA: stream capture of the calling thread's default stream into a CUDA graph — kernel
// arguments, pointers and host-side decisions are frozen at capture, so a replay must find its
// inputs at the same addresses (the caller rewrites their contents between replays), and the
// recorded work may not synchronise with the host. CPU: the recorded function itself is run again
// on replay (the reference semantics).
#pragma once

#include <functional>

#include "core/tensor_view.h"

namespace ds {

// The handle of the calling thread's default stream, the one steps run and are captured on (CUDA:
// cudaStreamPerThread), for kernels that take an explicit stream (a non-null handle lets them use
// programmatic dependent launches); nullptr on the CPU.
void* default_stream(Device device);

class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(StepGraph&& o) noexcept;
  StepGraph& operator=(StepGraph&& o) noexcept;
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Records `body` (CUDA: nothing runs until replay(); the device memory the body allocates and
  // frees comes from a scratch arena the graph owns, sized by a first recording, so that the graph
  // holds no memory nodes and consecutive programmatic dependent launches stay overlapped). Throws ds::Error
  // if the body fails or cannot be captured; the graph is then empty.
  void capture(Device device, std::function<void()> body);
  void replay() const;  // queued on the calling thread's default stream
  bool empty() const { return !body_ && exec_ == nullptr; }

 private:
  void reset();
  Device device_ = Device::Cpu;
  std::function<void()> body_;  // CPU
  void* exec_ = nullptr;        // CUDA: cudaGraphExec_t
};

}  // namespace ds
