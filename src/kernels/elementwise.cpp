#include "kernels/elementwise.h"

#include "core/dtype.h"
#include "kernels/cpu/rows.h"
#include "kernels/dispatch.h"
#include "kernels/uniform_hash.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {
namespace {

// f32 row views of x's shape on x's device.
void check_pair(const char* op, const TensorView& x, const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, cols = x.ndim == 2 ? x.shape[1] : -1;
  detail::check_rows(op, "x", x, rows, cols);
  detail::check_rows(op, "y", y, rows, cols);
  check_same_device(op, x.device, {&y});
}

[[maybe_unused]] const float* cf(const TensorView& v) {
  return static_cast<const float*>(v.data);
}
[[maybe_unused]] float* mf(const TensorView& v) {
  return static_cast<float*>(v.data);
}

}  // namespace

void cast_rows(const TensorView& x, const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, cols = x.ndim == 2 ? x.shape[1] : -1;
  detail::check_rows_f32_or_bf16("cast_rows", "x", x, rows, cols);
  detail::check_rows_f32_or_bf16("cast_rows", "y", y, rows, cols);
  check_same_device("cast_rows", x.device, {&y});
  if (x.device == Device::Cpu) return cpu::cast_rows(x, y);
#ifdef DS_HAVE_CUDA
  return cuda::launch_cast_rows(x.data, x.dtype == DType::BF16, x.stride[0], y.data, y.dtype == DType::BF16,
                                y.stride[0], rows, cols);
#endif
  detail::no_backend("cast_rows", x.device);
}

void add_rows(const TensorView& x, const TensorView& y) {
  check_pair("add_rows", x, y);
  if (x.device == Device::Cpu) return cpu::add_rows(x, y);
#ifdef DS_HAVE_CUDA
  return cuda::launch_binary_rows(cuda::BinaryOp::Add, cf(x), x.stride[0], mf(y), y.stride[0], x.shape[0],
                                  x.shape[1]);
#endif
  detail::no_backend("add_rows", x.device);
}

void mul_sigmoid_rows(const TensorView& g, const TensorView& y) {
  check_pair("mul_sigmoid_rows", g, y);
  if (g.device == Device::Cpu) return cpu::mul_sigmoid_rows(g, y);
#ifdef DS_HAVE_CUDA
  return cuda::launch_binary_rows(cuda::BinaryOp::MulSigmoid, cf(g), g.stride[0], mf(y), y.stride[0],
                                  g.shape[0], g.shape[1]);
#endif
  detail::no_backend("mul_sigmoid_rows", g.device);
}

void situ_mul_rows(const TensorView& gate, const TensorView& up, const TensorView& y, float beta,
                   float linear_beta) {
  check_pair("situ_mul_rows", gate, up);
  check_pair("situ_mul_rows", gate, y);
  DS_CHECK(beta > 0.0f, "situ_mul_rows: activation_situ_beta must be > 0, got {}", beta);
  if (gate.device == Device::Cpu) return cpu::situ_mul_rows(gate, up, y, beta, linear_beta);
#ifdef DS_HAVE_CUDA
  return cuda::launch_situ_mul(cf(gate), gate.stride[0], cf(up), up.stride[0], mf(y), y.stride[0],
                               gate.shape[0], gate.shape[1], beta, linear_beta);
#endif
  detail::no_backend("situ_mul_rows", gate.device);
}

void fill_uniform(const TensorView& x, uint64_t seed, float scale, float offset) {
  DS_CHECK(x.is_contiguous() && (x.dtype == DType::F32 || x.dtype == DType::BF16),
           "fill_uniform: a contiguous F32 or BF16 view");
  const int64_t n = x.numel();
  if (n == 0) return;
  if (x.device == Device::Cpu) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = offset + scale * uniform_hash(seed, uint64_t(i));
      if (x.dtype == DType::F32)
        static_cast<float*>(x.data)[i] = v;
      else
        static_cast<uint16_t*>(x.data)[i] = f32_to_bf16(v);
    }
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::launch_fill_uniform(x.data, x.dtype == DType::BF16, n, seed, scale, offset);
#endif
  detail::no_backend("fill_uniform", x.device);
}

}  // namespace ds
