#include "layers/low_rank_proj.h"

#include <vector>

#include "core/check.h"
#include "kernels/linear.h"
#include "kernels/norm.h"

namespace ds {
namespace {

void check_shape(const WeightView& w, int64_t rows, int64_t cols, const char* what) {
  check_weight(w, what);
  DS_CHECK(w.rows == rows && w.cols == cols, "weight {}: shape [{}, {}], expected [{}, {}]", what, w.rows,
           w.cols, rows, cols);
}

}  // namespace

void check_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b, int64_t out,
                            int64_t in, const RankedProjNames& names) {
  if (full.data != nullptr) {
    DS_CHECK(a.data == nullptr && b.data == nullptr, "{}", names.both_set);
    check_shape(full, out, in, names.full);
    return;
  }
  check_weight(a, names.a);
  check_shape(a, a.rows, in, names.a);
  check_shape(b, out, a.rows, names.b);
}

void project_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b,
                              const float* norm_w, float eps, const float* x, int64_t T, float* y) {
  if (full.data != nullptr) {
    linear(f32_rows(x, T, full.cols), full, f32_rows(y, T, full.rows));
    return;
  }
  std::vector<float> low(size_t(T * a.rows));
  linear(f32_rows(x, T, a.cols), a, f32_rows(low.data(), T, a.rows));
  if (norm_w != nullptr)
    rmsnorm(f32_rows(low.data(), T, a.rows), f32_vec(norm_w, a.rows), eps, f32_rows(low.data(), T, a.rows));
  linear(f32_rows(low.data(), T, b.cols), b, f32_rows(y, T, b.rows));
}

}  // namespace ds
