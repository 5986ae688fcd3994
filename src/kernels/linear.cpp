#include "kernels/linear.h"

#include <vector>

#include "kernels/cpu/linear.h"
#include "kernels/dispatch.h"

namespace ds {

namespace {
void check_job(const TensorView& x, const WeightView& w, const TensorView& y) {
  check_weight(w, "linear");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  detail::check_rows("linear", "x", x, T, w.cols);
  detail::check_rows("linear", "y", y, T, w.rows);
  check_same_device("linear", w.device, {&x, &y});
}
}  // namespace

void linear(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate) {
  check_job(x, w, y);
  const int64_t T = x.shape[0];
  switch (w.device) {
    case Device::Cpu:
      return cpu::linear_strided(static_cast<const float*>(x.data), x.stride[0], T, w,
                                 static_cast<float*>(y.data), y.stride[0], accumulate);
    case Device::Cuda:
      break;
  }
  detail::no_backend("linear", w.device);
}

void linear_batch(std::span<const LinearJob> jobs) {
  bool all_cpu = true;
  for (const LinearJob& j : jobs) {
    check_job(j.x, j.w, j.y);
    all_cpu = all_cpu && j.w.device == Device::Cpu;
  }
  if (!all_cpu) {
    for (const LinearJob& j : jobs) linear(j.x, j.w, j.y, j.accumulate);
    return;
  }
  std::vector<cpu::LinearJob> c;
  c.reserve(jobs.size());
  for (const LinearJob& j : jobs)
    c.push_back({static_cast<const float*>(j.x.data), j.x.stride[0], j.x.shape[0], j.w,
                 static_cast<float*>(j.y.data), j.y.stride[0], j.accumulate});
  cpu::linear_batch(c);
}

}  // namespace ds
