#include "kernels/softmax.h"

#include "kernels/cpu/softmax.h"
#include "kernels/dispatch.h"

namespace ds {

void softmax_rows(const TensorView& x, const TensorView& y) {
  const int64_t rows = x.ndim == 2 ? x.shape[0] : -1, dim = x.ndim == 2 ? x.shape[1] : -1;
  detail::check_rows("softmax_rows", "x", x, rows, dim);
  detail::check_rows("softmax_rows", "y", y, rows, dim);
  DS_CHECK(dim >= 1 && (rows <= 1 || (x.stride[0] == dim && y.stride[0] == dim)),
           "softmax_rows: rows must be contiguous and non-empty (dim {})", dim);
  check_same_device("softmax_rows", x.device, {&y});
  if (x.device != Device::Cpu) detail::no_backend("softmax_rows", x.device);
  cpu::softmax_rows(static_cast<const float*>(x.data), rows, dim, static_cast<float*>(y.data));
}

}  // namespace ds
