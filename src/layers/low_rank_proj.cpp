#include "layers/low_rank_proj.h"

#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"

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
    linear(x, T, full, y);
    return;
  }
  std::vector<float> low(size_t(T * a.rows));
  linear(x, T, a, low.data());
  if (norm_w != nullptr) rmsnorm(low.data(), T, a.rows, norm_w, eps, low.data());
  linear(low.data(), T, b, y);
}

}  // namespace ds
