#include "kernels/memory.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/memory.h"
#endif

namespace ds {

Buffer::Buffer(Device device, int64_t bytes, bool pinned) : bytes_(bytes), device_(device) {
  DS_CHECK(bytes >= 0, "buffer: {} bytes", bytes);
  if (bytes == 0) return;
  if (device == Device::Cuda || (pinned && cuda_available())) {
#ifdef DS_HAVE_CUDA
    pinned_ = device == Device::Cpu;
    ptr_ = pinned_ ? cuda::alloc_pinned(bytes) : cuda::alloc_device(bytes);
    return;
#endif
    detail::no_backend("buffer", device);
  }
  ptr_ = std::aligned_alloc(64, size_t((bytes + 63) / 64 * 64));
  DS_CHECK(ptr_ != nullptr, "buffer: out of host memory ({} bytes)", bytes);
}

Buffer::~Buffer() {
  release();
}

void Buffer::release() {
  if (ptr_ == nullptr) return;
#ifdef DS_HAVE_CUDA
  if (device_ == Device::Cuda) cuda::free_device(ptr_);
  if (pinned_) cuda::free_pinned(ptr_);
  if (device_ == Device::Cuda || pinned_) {
    ptr_ = nullptr;
    return;
  }
#endif
  std::free(ptr_);
  ptr_ = nullptr;
}

Buffer::Buffer(Buffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      device_(o.device_),
      pinned_(o.pinned_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
    pinned_ = o.pinned_;
  }
  return *this;
}

void Buffer::upload(const void* host, int64_t bytes, int64_t offset) {
  DS_CHECK(offset >= 0 && bytes >= 0 && offset + bytes <= bytes_, "buffer upload: {} bytes at {} into {}",
           bytes, offset, bytes_);
  copy_bytes(static_cast<char*>(ptr_) + offset, device_, host, Device::Cpu, bytes);
}

void Buffer::download(void* host, int64_t bytes, int64_t offset) const {
  DS_CHECK(offset >= 0 && bytes >= 0 && offset + bytes <= bytes_, "buffer download: {} bytes at {} of {}",
           bytes, offset, bytes_);
  copy_bytes(host, Device::Cpu, static_cast<const char*>(ptr_) + offset, device_, bytes);
}

void Buffer::zero() {
  zero_bytes(ptr_, device_, bytes_);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, int64_t bytes) {
  if (bytes <= 0) return;
  DS_CHECK(dst != nullptr && src != nullptr, "copy_bytes: null pointer ({} bytes)", bytes);
  if (dst_device == Device::Cpu && src_device == Device::Cpu) {
    std::memmove(dst, src, size_t(bytes));
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::copy(dst, dst_device == Device::Cuda, src, src_device == Device::Cuda, bytes);
#endif
  detail::no_backend("copy_bytes", Device::Cuda);
}

void copy_rows_bytes(void* dst, int64_t dst_pitch, Device dst_device, const void* src, int64_t src_pitch,
                     Device src_device, int64_t row_bytes, int64_t rows) {
  if (rows <= 0 || row_bytes <= 0) return;
  DS_CHECK(dst_pitch >= row_bytes && src_pitch >= row_bytes, "copy_rows_bytes: pitch {} / {} < row {} bytes",
           dst_pitch, src_pitch, row_bytes);
  if (dst_device == Device::Cpu && src_device == Device::Cpu) {
    for (int64_t r = 0; r < rows; ++r)
      std::memmove(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch,
                   size_t(row_bytes));
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::copy_2d(dst, dst_pitch, dst_device == Device::Cuda, src, src_pitch, src_device == Device::Cuda,
                       row_bytes, rows);
#endif
  detail::no_backend("copy_rows_bytes", Device::Cuda);
}

void zero_bytes(void* dst, Device device, int64_t bytes) {
  if (bytes <= 0) return;
  if (device == Device::Cpu) {
    std::memset(dst, 0, size_t(bytes));
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::zero(dst, bytes);
#endif
  detail::no_backend("zero_bytes", device);
}

void synchronize(Device device) {
  if (device == Device::Cpu) return;
#ifdef DS_HAVE_CUDA
  return cuda::synchronize();
#endif
  detail::no_backend("synchronize", device);
}

void profiler_range(bool on) {
#ifdef DS_HAVE_CUDA
  if (cuda_available()) cuda::profiler_range(on);
#else
  (void)on;
#endif
}

bool cuda_available() {
#ifdef DS_HAVE_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

}  // namespace ds
