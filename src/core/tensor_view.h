// TensorView: a non-owning, device-aware view of a strided tensor (up to 4 dims) in host or
// device memory: data pointer, element type, shape and strides (in elements), and the device the
// data lives on. Kernels dispatch on `device`; they never own or allocate through a view.
// A view passed as an input is only read, even though `data` is not const.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "core/check.h"
#include "core/dtype.h"

namespace ds {

enum class Device : uint8_t { Cpu, Cuda };

std::string_view device_name(Device d);  // "cpu" | "cuda"

struct TensorView {
  static constexpr int kMaxDims = 4;

  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::Cpu;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};   // elements per dimension
  std::array<int64_t, kMaxDims> stride{};  // elements between neighbours along each dimension

  // Contiguous row-major view of `shape`.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::Cpu);
  // 2-D row view [rows, cols] with rows `row_stride` elements apart (-1: contiguous). The common
  // activation layout: tokens × features, possibly a column slice of a wider matrix.
  static TensorView matrix(void* data, DType dtype, int64_t rows, int64_t cols, int64_t row_stride = -1,
                           Device device = Device::Cpu);

  int64_t size(int d) const { return shape[size_t(d)]; }
  int64_t numel() const;
  int64_t bytes() const { return numel() * int64_t(dtype_size(dtype)); }
  bool is_contiguous() const;  // row-major without gaps
  // Rows of a 2-D view have unit column stride (the layout every row kernel takes).
  bool has_unit_inner_stride() const { return ndim == 0 || stride[size_t(ndim - 1)] == 1; }

  // Typed pointer; throws ds::Error naming `what` if the view's dtype is not T's.
  template <class T>
  T* as(const char* what) const;
};

// f32 row views of host or device buffers (the layers' activations).
inline TensorView f32_rows(float* p, int64_t rows, int64_t cols, int64_t row_stride = -1,
                           Device device = Device::Cpu) {
  return TensorView::matrix(p, DType::F32, rows, cols, row_stride, device);
}
inline TensorView f32_rows(const float* p, int64_t rows, int64_t cols, int64_t row_stride = -1,
                           Device device = Device::Cpu) {
  return f32_rows(const_cast<float*>(p), rows, cols, row_stride, device);
}

// 1-D f32 view of n values (small parameters, flat activations).
inline TensorView f32_vec(const float* p, int64_t n, Device device = Device::Cpu) {
  return TensorView::contiguous(const_cast<float*>(p), DType::F32, {n}, device);
}

// Throws ds::Error unless every view is on `device`; `what` names the operation.
void check_same_device(const char* what, Device device, std::initializer_list<const TensorView*> views);

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct DTypeOf<uint16_t> {  // raw bf16 bits
  static constexpr DType value = DType::BF16;
};

template <class T>
T* TensorView::as(const char* what) const {
  DS_CHECK(dtype == DTypeOf<std::remove_const_t<T>>::value, "{}: tensor dtype {} where {} is required", what,
           dtype_name(dtype), dtype_name(DTypeOf<std::remove_const_t<T>>::value));
  return static_cast<T*>(data);
}

}  // namespace ds
