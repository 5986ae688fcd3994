#include "kernels/linear.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/linear.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/dense.h"
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {

namespace {
void check_job(const TensorView& x, const WeightView& w, const TensorView& y) {
  check_weight(w, "linear");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  if (w.device == Device::Cpu) {
    detail::check_rows("linear", "x", x, T, w.cols);
    detail::check_rows("linear", "y", y, T, w.rows);
  } else {
    detail::check_rows_f32_or_bf16("linear", "x", x, T, w.cols);
    detail::check_rows_f32_or_bf16("linear", "y", y, T, w.rows);
    DS_CHECK(x.dtype == w.dtype, "linear: {} activations with a {} weight on {} (cast one of them)",
             dtype_name(x.dtype), dtype_name(w.dtype), device_name(w.device));
  }
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
#ifdef DS_HAVE_CUDA
      return cuda::linear(x, w, y, accumulate);
#endif
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

bool linear_few_rows_fits(const TensorView& x, const WeightView& w) {
  const uintptr_t xa = reinterpret_cast<uintptr_t>(x.data), wa = reinterpret_cast<uintptr_t>(w.data);
  return x.ndim == 2 && x.dtype == DType::F32 && x.shape[0] >= 1 && x.shape[0] <= kLinearFewRows &&
         w.cols % 8 == 0 && x.stride[0] % 4 == 0 && xa % 16 == 0 && wa % 16 == 0;
}

void linear_few_rows(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate) {
  check_weight(w, "linear_few_rows");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  detail::check_rows("linear_few_rows", "x", x, T, w.cols);
  detail::check_rows("linear_few_rows", "y", y, T, w.rows);
  check_same_device("linear_few_rows", w.device, {&x, &y});
  DS_CHECK(linear_few_rows_fits(x, w),
           "linear_few_rows: {} rows of {} (at most {} rows, a multiple of 8 columns, "
           "16-byte aligned)",
           T, w.cols, kLinearFewRows);
  if (w.device == Device::Cpu) return linear(x, w, y, accumulate);
#ifdef DS_HAVE_CUDA
  return cuda::launch_linear_few_rows(static_cast<const float*>(x.data), x.stride[0], T, w.data,
                                      w.dtype == DType::BF16, w.rows, w.cols, static_cast<float*>(y.data),
                                      y.stride[0], accumulate);
#endif
  detail::no_backend("linear_few_rows", w.device);
}

void linear_few_rows_multi(const TensorView& x, std::span<const FewRowsJob> jobs) {
  DS_CHECK(!jobs.empty() && int64_t(jobs.size()) <= kLinearFewRowsJobs,
           "linear_few_rows_multi: {} jobs (1..{})", jobs.size(), kLinearFewRowsJobs);
  const WeightView& w0 = jobs[0].w;
  auto x_of = [&](const FewRowsJob& j) -> const TensorView& { return j.x.data != nullptr ? j.x : x; };
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  for (const FewRowsJob& j : jobs) {
    check_weight(j.w, "linear_few_rows_multi");
    detail::check_rows("linear_few_rows_multi", "x", x, T, j.w.cols);
    if (j.x.data != nullptr) detail::check_rows("linear_few_rows_multi", "a job's own x", j.x, T, j.w.cols);
    detail::check_rows("linear_few_rows_multi", "y", j.y, T, j.w.rows);
    check_same_device("linear_few_rows_multi", w0.device, {&x, &x_of(j), &j.y});
    DS_CHECK(j.w.dtype == w0.dtype && j.w.device == w0.device && j.w.cols == w0.cols,
             "linear_few_rows_multi: weights of different dtypes, devices or widths");
    DS_CHECK(
        linear_few_rows_fits(x_of(j), j.w) && j.y.stride[1] == 1,
        "linear_few_rows_multi: {} rows of {} (at most {} rows, a multiple of 8 columns, 16-byte aligned)", T,
        j.w.cols, kLinearFewRows);
  }
  if (w0.device == Device::Cpu) {
    for (const FewRowsJob& j : jobs) linear(x_of(j), j.w, j.y, j.accumulate);
    return;
  }
#ifdef DS_HAVE_CUDA
  cuda::FewRowsLaunchJob lj[kLinearFewRowsJobs];
  for (size_t i = 0; i < jobs.size(); ++i)
    lj[i] = {jobs[i].w.data,         static_cast<float*>(jobs[i].y.data),
             jobs[i].y.stride[0],    jobs[i].w.rows,
             jobs[i].accumulate,     static_cast<const float*>(x_of(jobs[i]).data),
             x_of(jobs[i]).stride[0]};
  return cuda::launch_linear_few_rows_multi(static_cast<const float*>(x.data), x.stride[0], x.shape[0],
                                            w0.dtype == DType::BF16, w0.cols, lj, int(jobs.size()));
#endif
  detail::no_backend("linear_few_rows_multi", w0.device);
}

void linear_few_rows_glu(const TensorView& gate, const TensorView& up, const WeightView& w,
                         const TensorView& y, bool accumulate) {
  check_weight(w, "linear_few_rows_glu");
  const int64_t T = gate.ndim == 2 ? gate.shape[0] : -1;
  detail::check_rows("linear_few_rows_glu", "gate", gate, T, w.cols);
  detail::check_rows("linear_few_rows_glu", "up", up, T, w.cols);
  detail::check_rows("linear_few_rows_glu", "y", y, T, w.rows);
  check_same_device("linear_few_rows_glu", w.device, {&gate, &up, &y});
  DS_CHECK(linear_few_rows_fits(gate, w) && linear_few_rows_fits(up, w),
           "linear_few_rows_glu: {} rows of {} (at most {} rows, a multiple of 8 columns, 16-byte aligned)",
           T, w.cols, kLinearFewRows);
  if (w.device == Device::Cpu) {
    std::vector<float> h(size_t(T * w.cols));
    const TensorView hv = TensorView::matrix(h.data(), DType::F32, T, w.cols, -1, Device::Cpu);
    for (int64_t t = 0; t < T; ++t) {
      const float* g = static_cast<const float*>(gate.data) + t * gate.stride[0];
      const float* u = static_cast<const float*>(up.data) + t * up.stride[0];
      for (int64_t c = 0; c < w.cols; ++c) h[size_t(t * w.cols + c)] = g[c] / (1.0f + std::exp(-g[c])) * u[c];
    }
    return linear(hv, w, y, accumulate);
  }
#ifdef DS_HAVE_CUDA
  const cuda::FewRowsLaunchJob j{w.data,     static_cast<float*>(y.data),          y.stride[0],   w.rows,
                                 accumulate, static_cast<const float*>(gate.data), gate.stride[0]};
  return cuda::launch_linear_few_rows_multi(static_cast<const float*>(gate.data), gate.stride[0], T,
                                            w.dtype == DType::BF16, w.cols, &j, 1,
                                            static_cast<const float*>(up.data), up.stride[0]);
#endif
  detail::no_backend("linear_few_rows_glu", w.device);
}

bool linear_few_rows_heads_fits(const TensorView& x, const WeightView& w, const HeadStrides& stride) {
  const uintptr_t xa = reinterpret_cast<uintptr_t>(x.data), wa = reinterpret_cast<uintptr_t>(w.data);
  if (x.ndim != 2 || x.dtype != DType::F32 || w.dtype != DType::BF16 || x.shape[0] < 1 || x.shape[0] > 2 ||
      x.stride[0] % 4 != 0 || stride.x % 4 != 0 || stride.w % 8 != 0 || xa % 16 != 0 || wa % 16 != 0)
    return false;
#ifdef DS_HAVE_CUDA
  return cuda::few_rows_heads_shape_ok(x.shape[0], w.cols, w.rows);
#else
  return true;
#endif
}

void linear_few_rows_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                           const HeadStrides& stride) {
  check_weight(w, "linear_few_rows_heads");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  detail::check_rows("linear_few_rows_heads", "x", x, T, w.cols);
  detail::check_rows("linear_few_rows_heads", "y", y, T, w.rows);
  check_same_device("linear_few_rows_heads", w.device, {&x, &y});
  DS_CHECK(heads >= 1 && stride.x >= 0 && stride.w >= 0 && stride.y >= 0 &&
               linear_few_rows_heads_fits(x, w, stride),
           "linear_few_rows_heads: {} heads, {} rows of {} (1-2 f32 rows, bf16 W, in / 8 dividing 32 or a "
           "multiple of 32 up to 256, 16-byte aligned)",
           heads, T, w.cols);
  if (w.device == Device::Cpu) return linear_heads(x, w, y, heads, stride);
#ifdef DS_HAVE_CUDA
  cuda::HeadsLaunch l{
      static_cast<const float*>(x.data), x.stride[0], stride.x, w.data,    stride.w, w.cols, w.rows, heads,
      static_cast<float*>(y.data),       y.stride[0], stride.y, x.shape[0]};
  return cuda::launch_linear_few_rows_heads(l);
#endif
  detail::no_backend("linear_few_rows_heads", w.device);
}

void linear_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                  const HeadStrides& stride, bool accumulate) {
  check_job(x, w, y);
  DS_CHECK(heads >= 1 && stride.x >= 0 && stride.w >= 0 && stride.y >= 0, "linear_heads: {} heads", heads);
  const auto at = [](const void* p, DType dt, int64_t off) {
    return static_cast<const char*>(p) + off * int64_t(dtype_size(dt));
  };
  if (w.device == Device::Cuda && heads > 1) {
#ifdef DS_HAVE_CUDA
    return cuda::linear_heads(x, w, y, heads, stride.x, stride.w, stride.y, accumulate);
#endif
  }
  for (int64_t h = 0; h < heads; ++h) {
    TensorView xh = x, yh = y;
    WeightView wh = w;
    xh.data = const_cast<char*>(at(x.data, x.dtype, h * stride.x));
    yh.data = const_cast<char*>(at(y.data, y.dtype, h * stride.y));
    wh.data = at(w.data, w.dtype, h * stride.w);
    linear(xh, wh, yh, accumulate);
  }
}

}  // namespace ds
