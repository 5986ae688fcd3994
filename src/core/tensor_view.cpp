#include "core/tensor_view.h"

namespace ds {

std::string_view device_name(Device d) {
  return d == Device::Cuda ? "cuda" : "cpu";
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                                  Device device) {
  DS_CHECK(shape.size() <= size_t(kMaxDims), "tensor view: {} dims, at most {}", shape.size(), kMaxDims);
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.ndim = int(shape.size());
  int i = 0;
  for (int64_t n : shape) {
    DS_CHECK(n >= 0, "tensor view: negative size {} in dim {}", n, i);
    v.shape[size_t(i++)] = n;
  }
  int64_t s = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.stride[size_t(d)] = s;
    s *= v.shape[size_t(d)];
  }
  return v;
}

TensorView TensorView::matrix(void* data, DType dtype, int64_t rows, int64_t cols, int64_t row_stride,
                              Device device) {
  TensorView v = contiguous(data, dtype, {rows, cols}, device);
  if (row_stride >= 0) {
    DS_CHECK(row_stride >= cols, "tensor view: row stride {} < {} columns", row_stride, cols);
    v.stride[0] = row_stride;
  }
  return v;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[size_t(d)];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[size_t(d)] != 1 && stride[size_t(d)] != s) return false;
    s *= shape[size_t(d)];
  }
  return true;
}

void check_same_device(const char* what, Device device, std::initializer_list<const TensorView*> views) {
  for (const TensorView* v : views)
    DS_CHECK(v->device == device, "{}: a {} tensor mixed with {} tensors", what, device_name(v->device),
             device_name(device));
}

}  // namespace ds
