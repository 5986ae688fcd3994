#include "kernels/short_conv.h"

#include "kernels/cpu/short_conv.h"
#include "kernels/dispatch.h"

namespace ds {

void short_conv_silu(const TensorView& x, const TensorView& taps, const TensorView& state,
                     const TensorView& y) {
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1, C = x.ndim == 2 ? x.shape[1] : -1;
  const int64_t W = taps.ndim == 2 ? taps.shape[1] : -1;
  detail::check_rows("short_conv_silu", "x", x, T, C);
  detail::check_rows("short_conv_silu", "y", y, T, C);
  DS_CHECK(W >= 1, "short_conv_silu: taps must be [C, W], got {} dims", taps.ndim);
  detail::check_flat("short_conv_silu", "taps", taps, C * W);
  detail::check_flat("short_conv_silu", "state", state, C * (W - 1));
  check_same_device("short_conv_silu", x.device, {&taps, &state, &y});
  if (x.device != Device::Cpu) detail::no_backend("short_conv_silu", x.device);
  cpu::short_conv_silu(static_cast<const float*>(x.data), x.stride[0], T, C,
                       static_cast<const float*>(taps.data), W, static_cast<float*>(state.data),
                       static_cast<float*>(y.data), y.stride[0]);
}

}  // namespace ds
