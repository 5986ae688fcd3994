#include "kernels/graph.h"

#include <utility>

#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/graph.h"
#endif

namespace ds {

StepGraph::~StepGraph() {
  reset();
}

StepGraph::StepGraph(StepGraph&& o) noexcept
    : device_(o.device_), body_(std::move(o.body_)), exec_(std::exchange(o.exec_, nullptr)) {
  o.body_ = nullptr;
}

StepGraph& StepGraph::operator=(StepGraph&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    body_ = std::move(o.body_);
    o.body_ = nullptr;
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

void StepGraph::reset() {
  body_ = nullptr;
#ifdef DS_HAVE_CUDA
  if (exec_) cuda::destroy_graph(exec_);
#endif
  exec_ = nullptr;
}

void StepGraph::capture(Device device, std::function<void()> body) {
  reset();
  device_ = device;
  if (device == Device::Cpu) {
    body_ = std::move(body);
    return;
  }
#ifdef DS_HAVE_CUDA
  exec_ = cuda::capture_graph(body);
  return;
#endif
  detail::no_backend("StepGraph::capture", device);
}

void* default_stream(Device device) {
#ifdef DS_HAVE_CUDA
  if (device == Device::Cuda) return cuda::per_thread_stream();
#endif
  (void)device;
  return nullptr;
}

void StepGraph::replay() const {
  DS_CHECK(!empty(), "StepGraph::replay: nothing recorded");
  if (device_ == Device::Cpu) return body_();
#ifdef DS_HAVE_CUDA
  return cuda::launch_graph(exec_);
#endif
  detail::no_backend("StepGraph::replay", device_);
}

}  // namespace ds
