#include "kernels/dispatch.h"

namespace ds::detail {

void no_backend(const char* op, Device device) {
  if (device == Device::Cuda && !kHaveCuda)
    fail("{}: a CUDA tensor, but deltaserve was built without CUDA (configure with -DDS_CUDA=ON)", op);
  fail("{}: no {} implementation", op, device_name(device));
}

void check_rows(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t cols) {
  DS_CHECK(v.dtype == DType::F32, "{}: {} is {}, f32 required", op, what, dtype_name(v.dtype));
  DS_CHECK(v.ndim == 2 && v.shape[0] == rows && v.shape[1] == cols,
           "{}: {} has shape [{}, {}] ({} dims), expected [{}, {}]", op, what, v.shape[0], v.shape[1], v.ndim,
           rows, cols);
  DS_CHECK(v.stride[1] == 1 && v.stride[0] >= cols, "{}: {} is not a row view (strides {}, {})", op, what,
           v.stride[0], v.stride[1]);
  DS_CHECK(v.data != nullptr || rows == 0 || cols == 0, "{}: {} has no data", op, what);
}

void check_rows_f32_or_bf16(const char* op, const char* what, const TensorView& v, int64_t rows,
                            int64_t cols) {
  DS_CHECK(v.dtype == DType::F32 || v.dtype == DType::BF16, "{}: {} is {}, f32 or bf16 required", op, what,
           dtype_name(v.dtype));
  TensorView as_f32 = v;
  as_f32.dtype = DType::F32;
  check_rows(op, what, as_f32, rows, cols);
}

void check_flat(const char* op, const char* what, const TensorView& v, int64_t n, DType dtype) {
  DS_CHECK(v.dtype == dtype, "{}: {} is {}, {} required", op, what, dtype_name(v.dtype), dtype_name(dtype));
  DS_CHECK(v.is_contiguous() && v.numel() == n, "{}: {} has {} elements (contiguous: {}), expected {}", op,
           what, v.numel(), v.is_contiguous(), n);
  DS_CHECK(v.data != nullptr || n == 0, "{}: {} has no data", op, what);
}

}  // namespace ds::detail
