#include "kernels/activation.h"

#include "kernels/cpu/activation.h"
#include "kernels/dispatch.h"

namespace ds {
namespace {

using UnaryCpu = void (*)(const float*, int64_t, float*);

void unary(const char* op, UnaryCpu cpu_fn, const TensorView& x, const TensorView& y) {
  detail::check_flat(op, "x", x, x.numel());
  detail::check_flat(op, "y", y, x.numel());
  check_same_device(op, x.device, {&y});
  if (x.device != Device::Cpu) detail::no_backend(op, x.device);
  cpu_fn(static_cast<const float*>(x.data), x.numel(), static_cast<float*>(y.data));
}

}  // namespace

void silu(const TensorView& x, const TensorView& y) {
  unary("silu", cpu::silu, x, y);
}
void sigmoid(const TensorView& x, const TensorView& y) {
  unary("sigmoid", cpu::sigmoid, x, y);
}
void softplus(const TensorView& x, const TensorView& y) {
  unary("softplus", cpu::softplus, x, y);
}

void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) {
  const int64_t n = gate.numel();
  detail::check_flat("silu_mul", "gate", gate, n);
  detail::check_flat("silu_mul", "up", up, n);
  detail::check_flat("silu_mul", "y", y, n);
  check_same_device("silu_mul", gate.device, {&up, &y});
  if (gate.device != Device::Cpu) detail::no_backend("silu_mul", gate.device);
  cpu::silu_mul(static_cast<const float*>(gate.data), static_cast<const float*>(up.data), n,
                static_cast<float*>(y.data));
}

}  // namespace ds
