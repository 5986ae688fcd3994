#include "kernels/expert_linear.h"

#include "core/mxfp4.h"
#include "kernels/cpu/mxfp4_linear.h"
#include "kernels/dispatch.h"
#include "kernels/linear.h"

namespace ds {

void ExpertLinear::validate(const char* what) const {
  if (!is_mxfp4()) {
    check_weight(dense, what);
    return;
  }
  DS_CHECK(mxfp4.scale != nullptr, "weight {}: MXFP4 without weight_scale", what);
  DS_CHECK(mxfp4.rows > 0 && mxfp4.cols > 0 && mxfp4.cols % kMxfp4BlockSize == 0,
           "weight {}: MXFP4 shape [{}, {}] needs in % 32 == 0", what, mxfp4.rows, mxfp4.cols);
}

void expert_linear(const TensorView& x, const ExpertLinear& w, const TensorView& y, bool accumulate) {
  if (!w.is_mxfp4()) return linear(x, w.dense, y, accumulate);
  w.validate("expert_linear");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  detail::check_rows("expert_linear", "x", x, T, w.cols());
  detail::check_rows("expert_linear", "y", y, T, w.rows());
  check_same_device("expert_linear", w.device(), {&x, &y});
  if (w.device() != Device::Cpu) detail::no_backend("expert_linear (MXFP4)", w.device());
  cpu::mxfp4_linear(static_cast<const float*>(x.data), x.stride[0], T, w.mxfp4, static_cast<float*>(y.data),
                    y.stride[0], accumulate);
}

}  // namespace ds
