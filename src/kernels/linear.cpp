#include "kernels/linear.h"

#include "kernels/cpu/linear.h"
#include "kernels/dispatch.h"

namespace ds {

void linear(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate) {
  check_weight(w, "linear");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  detail::check_rows("linear", "x", x, T, w.cols);
  detail::check_rows("linear", "y", y, T, w.rows);
  check_same_device("linear", w.device, {&x, &y});
  switch (w.device) {
    case Device::Cpu:
      return cpu::linear_strided(static_cast<const float*>(x.data), x.stride[0], T, w,
                                 static_cast<float*>(y.data), y.stride[0], accumulate);
    case Device::Cuda:
      break;
  }
  detail::no_backend("linear", w.device);
}

}  // namespace ds
