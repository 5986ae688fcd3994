// Memory on either device (one interface): an owning Buffer (host: ordinary or pinned memory;
// CUDA: stream-ordered device memory that the pool keeps for reuse) and byte copies / zero fills
// between any two devices. Used for device-resident weights, the executor's page and slot pools and
// per-step scratch. All CUDA work runs on the default stream, so a copy or fill is ordered after
// every kernel launched before it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor_view.h"

namespace ds {

class Buffer {
 public:
  Buffer() = default;
  // `bytes` of uninitialised memory on `device`; pinned = page-locked host memory (device == Cpu,
  // a CUDA build: faster, asynchronous-capable copies; ordinary memory otherwise).
  Buffer(Device device, int64_t bytes, bool pinned = false);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // A buffer on `device` holding a copy of host values.
  template <class T>
  static Buffer from_host(Device device, std::span<const T> values) {
    Buffer b(device, int64_t(values.size_bytes()));
    b.upload(values.data(), int64_t(values.size_bytes()));
    return b;
  }
  void upload(const void* host, int64_t bytes, int64_t offset = 0);    // host -> this buffer
  void download(void* host, int64_t bytes, int64_t offset = 0) const;  // this buffer -> host
  template <class T>
  std::vector<T> to_host() const {
    std::vector<T> out(size_t(bytes_) / sizeof(T));
    download(out.data(), int64_t(out.size() * sizeof(T)));
    return out;
  }
  void zero();

  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  Device device() const { return device_; }
  int64_t bytes() const { return bytes_; }

 private:
  void release();
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  Device device_ = Device::Cpu;
  bool pinned_ = false;
};

// dst (on dst_device) <- src (on src_device), `bytes` bytes; regions must not overlap.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, int64_t bytes);
// `rows` rows of `row_bytes` each, rows `dst_pitch` / `src_pitch` bytes apart.
void copy_rows_bytes(void* dst, int64_t dst_pitch, Device dst_device, const void* src, int64_t src_pitch,
                     Device src_device, int64_t row_bytes, int64_t rows);
void zero_bytes(void* dst, Device device, int64_t bytes);
// Waits until every operation queued on `device` has finished (no-op on the CPU).
void synchronize(Device device);
// Starts (on) / stops the CUDA profiler's capture range, e.g. for Nsight Compute's
// --profile-from-start off; no-op on the CPU and in a CPU-only build.
void profiler_range(bool on);
// Whether a CUDA device is usable by this process (false on a CPU-only build or without a GPU).
bool cuda_available();

}  // namespace ds
