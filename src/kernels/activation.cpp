#include "kernels/activation.h"

#include "kernels/cpu/activation.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/dense.h"
#endif

namespace ds {
namespace {

using UnaryCpu = void (*)(const float*, int64_t, float*);
using UnaryDev = void (*)(const TensorView&, const TensorView&);

// Contiguous views of one dtype: f32 on the CPU, f32 or bf16 on CUDA.
void check_elementwise(const char* op, std::initializer_list<const TensorView*> views, int64_t n) {
  const TensorView& first = **views.begin();
  const DType dt = first.device == Device::Cpu ? DType::F32 : first.dtype;
  DS_CHECK(dt == DType::F32 || dt == DType::BF16, "{}: {} tensors", op, dtype_name(dt));
  for (const TensorView* v : views) {
    detail::check_flat(op, "operand", *v, n, dt);
    check_same_device(op, first.device, {v});
  }
}

void unary(const char* op, UnaryCpu cpu_fn, UnaryDev cuda_fn, const TensorView& x, const TensorView& y) {
  check_elementwise(op, {&x, &y}, x.numel());
  if (x.device == Device::Cuda && cuda_fn != nullptr) return cuda_fn(x, y);
  if (x.device != Device::Cpu) detail::no_backend(op, x.device);
  cpu_fn(static_cast<const float*>(x.data), x.numel(), static_cast<float*>(y.data));
}

#ifdef DS_HAVE_CUDA
constexpr UnaryDev kCudaSilu = &cuda::silu, kCudaSigmoid = &cuda::sigmoid;
#else
constexpr UnaryDev kCudaSilu = nullptr, kCudaSigmoid = nullptr;
#endif

}  // namespace

void silu(const TensorView& x, const TensorView& y) {
  unary("silu", cpu::silu, kCudaSilu, x, y);
}
void sigmoid(const TensorView& x, const TensorView& y) {
  unary("sigmoid", cpu::sigmoid, kCudaSigmoid, x, y);
}
void softplus(const TensorView& x, const TensorView& y) {
  unary("softplus", cpu::softplus, nullptr, x, y);
}

void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) {
  const int64_t n = gate.numel();
  check_elementwise("silu_mul", {&gate, &up, &y}, n);
  if (gate.device == Device::Cuda) {
#ifdef DS_HAVE_CUDA
    return cuda::silu_mul(gate, up, y);
#endif
  }
  if (gate.device != Device::Cpu) detail::no_backend("silu_mul", gate.device);
  cpu::silu_mul(static_cast<const float*>(gate.data), static_cast<const float*>(up.data), n,
                static_cast<float*>(y.data));
}

}  // namespace ds
