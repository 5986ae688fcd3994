#include "kernels/argmax.h"

#include "kernels/cpu/argmax.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {

int64_t argmax(const TensorView& x) {
  detail::check_flat("argmax", "x", x, x.numel());
  DS_CHECK(x.numel() >= 1, "argmax: empty input");
  if (x.device != Device::Cpu) detail::no_backend("argmax", x.device);
  return cpu::argmax(static_cast<const float*>(x.data), x.numel());
}

void argmax_rows(const TensorView& x, const TensorView& out) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, cols = x.ndim == 2 ? x.shape[1] : -1;
  detail::check_rows("argmax_rows", "x", x, rows, cols);
  DS_CHECK(cols >= 1, "argmax_rows: empty rows");
  detail::check_flat("argmax_rows", "out", out, rows, DType::I32);
  check_same_device("argmax_rows", x.device, {&out});
  if (x.device == Device::Cpu) {
    for (int64_t r = 0; r < rows; ++r)
      static_cast<int32_t*>(out.data)[r] =
          int32_t(cpu::argmax(static_cast<const float*>(x.data) + r * x.stride[0], cols));
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::launch_argmax_rows(static_cast<const float*>(x.data), x.stride[0], rows, cols,
                                  static_cast<int32_t*>(out.data));
#endif
  detail::no_backend("argmax_rows", x.device);
}

}  // namespace ds
