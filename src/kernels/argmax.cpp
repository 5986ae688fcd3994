#include "kernels/argmax.h"

#include "kernels/cpu/argmax.h"
#include "kernels/dispatch.h"

namespace ds {

int64_t argmax(const TensorView& x) {
  detail::check_flat("argmax", "x", x, x.numel());
  DS_CHECK(x.numel() >= 1, "argmax: empty input");
  if (x.device != Device::Cpu) detail::no_backend("argmax", x.device);
  return cpu::argmax(static_cast<const float*>(x.data), x.numel());
}

}  // namespace ds
