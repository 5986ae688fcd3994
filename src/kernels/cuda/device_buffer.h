// DeviceBuffer: an owning, move-only block of CUDA device memory (cudaMalloc / cudaFree), with
// typed host <-> device copies. For tests, benchmarks and long-lived pools; per-call scratch in the
// kernels uses stream-ordered cudaMallocAsync instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace ds::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  static DeviceBuffer from(const std::vector<T>& host) {
    DeviceBuffer b(host.size() * sizeof(T));
    if (!host.empty())
      check(cudaMemcpy(b.ptr_, host.data(), b.bytes_, cudaMemcpyHostToDevice), "copy to device");
    return b;
  }
  template <class T>
  std::vector<T> to_host() const {
    std::vector<T> out(bytes_ / sizeof(T));
    if (!out.empty())
      check(cudaMemcpy(out.data(), ptr_, out.size() * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
    return out;
  }
  void fill_bytes(int value) { check(cudaMemset(ptr_, value, bytes_), "cudaMemset"); }

  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ds::cuda
