#include "kernels/norm.h"

#include "kernels/cpu/norm.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/dense.h"
#include "kernels/cuda/dense_launch.h"
#endif

namespace ds {
namespace {

// [rows, dim] contiguous rows: f32 on the CPU, f32 or bf16 on CUDA.
void check_packed_rows(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t dim) {
  if (v.device == Device::Cpu)
    detail::check_rows(op, what, v, rows, dim);
  else
    detail::check_rows_f32_or_bf16(op, what, v, rows, dim);
  DS_CHECK(v.stride[0] == dim || rows <= 1, "{}: {} rows must be contiguous (row stride {}, dim {})", op,
           what, v.stride[0], dim);
}

const float* weight_or_null(const char* op, const TensorView& w, int64_t dim) {
  if (w.data == nullptr) return nullptr;
  detail::check_flat(op, "weight", w, dim);
  return static_cast<const float*>(w.data);
}

}  // namespace

void rmsnorm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, dim = x.ndim == 2 ? x.shape[1] : -1;
  check_packed_rows("rmsnorm", "x", x, rows, dim);
  check_packed_rows("rmsnorm", "y", y, rows, dim);
  const float* w = weight_or_null("rmsnorm", weight, dim);
  check_same_device("rmsnorm", x.device, {&y});
  if (w) check_same_device("rmsnorm", x.device, {&weight});
  DS_CHECK(x.dtype == y.dtype, "rmsnorm: x is {}, y is {}", dtype_name(x.dtype), dtype_name(y.dtype));
  switch (x.device) {
    case Device::Cpu:
      return cpu::rmsnorm(static_cast<const float*>(x.data), rows, dim, w, eps, static_cast<float*>(y.data));
    case Device::Cuda:
#ifdef DS_HAVE_CUDA
      return cuda::rmsnorm(x, weight, eps, y);
#endif
      break;
  }
  detail::no_backend("rmsnorm", x.device);
}

void add_rmsnorm(const TensorView& r, const TensorView& x, const TensorView& weight, float eps,
                 const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, dim = x.ndim == 2 ? x.shape[1] : -1;
  check_packed_rows("add_rmsnorm", "r", r, rows, dim);
  check_packed_rows("add_rmsnorm", "y", y, rows, dim);
  const float* w = weight_or_null("add_rmsnorm", weight, dim);
  check_same_device("add_rmsnorm", x.device, {&r, &y});
#ifdef DS_HAVE_CUDA
  if (x.device == Device::Cuda && x.dtype == DType::F32 && r.dtype == DType::F32 && y.dtype == DType::F32 &&
      cuda::launch_add_rmsnorm({static_cast<const float*>(r.data), r.stride[0], static_cast<float*>(x.data),
                                x.stride[0], static_cast<float*>(y.data), y.stride[0], w, rows, dim, eps}))
    return;
#endif
  add_rows(r, x);
  rmsnorm(x, weight, eps, y);
}

void rmsnorm_gated_sigmoid(const TensorView& x, const TensorView& gate, const TensorView& weight, float eps,
                           const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, dim = x.ndim == 2 ? x.shape[1] : -1;
  check_packed_rows("rmsnorm_gated_sigmoid", "x", x, rows, dim);
  check_packed_rows("rmsnorm_gated_sigmoid", "gate", gate, rows, dim);
  check_packed_rows("rmsnorm_gated_sigmoid", "y", y, rows, dim);
  detail::check_flat("rmsnorm_gated_sigmoid", "weight", weight, dim);
  check_same_device("rmsnorm_gated_sigmoid", x.device, {&gate, &weight, &y});
  DS_CHECK(x.dtype == y.dtype && gate.dtype == x.dtype,
           "rmsnorm_gated_sigmoid: x, gate and y must share a dtype");
  if (x.device == Device::Cuda) {
#ifdef DS_HAVE_CUDA
    return cuda::rmsnorm_gated_sigmoid(x, gate, weight, eps, y);
#endif
  }
  if (x.device != Device::Cpu) detail::no_backend("rmsnorm_gated_sigmoid", x.device);
  cpu::rmsnorm_gated_sigmoid(static_cast<const float*>(x.data), static_cast<const float*>(gate.data), rows,
                             dim, static_cast<const float*>(weight.data), eps, static_cast<float*>(y.data));
}

void l2norm_rows(const TensorView& x, float eps) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, dim = x.ndim == 2 ? x.shape[1] : -1;
  check_packed_rows("l2norm_rows", "x", x, rows, dim);
  if (x.device == Device::Cuda) {
#ifdef DS_HAVE_CUDA
    return cuda::l2norm_rows(x, eps);
#endif
  }
  if (x.device != Device::Cpu) detail::no_backend("l2norm_rows", x.device);
  cpu::l2norm_rows(static_cast<float*>(x.data), rows, dim, eps);
}

}  // namespace ds
