#include "layers/expert_linear.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/linear.h"
#include "model/mxfp4.h"

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

void mxfp4_rows_to_f32(const Mxfp4View& w, int64_t r0, int64_t n, float* out) {
  const size_t half = size_t(w.cols / 2), groups = size_t(w.cols / kMxfp4BlockSize), cols = size_t(w.cols);
  for (int64_t r = r0; r < r0 + n; ++r)
    mxfp4_decode_row({w.packed + size_t(r) * half, half}, {w.scale + size_t(r) * groups, groups},
                     {out + size_t(r - r0) * cols, cols});
}

void ExpertLinear::forward(const float* x, int64_t T, float* y, bool accumulate) const {
  if (T == 0) return;
  if (!is_mxfp4()) {
    if (accumulate)
      linear_accumulate(x, T, dense, y);
    else
      linear(x, T, dense, y);
    return;
  }
  const int64_t R = mxfp4.rows, C = mxfp4.cols;
  const int64_t n_panels = (R + kMxfp4PanelRows - 1) / kMxfp4PanelRows;
#pragma omp parallel if (T <= kLinearGemvMaxRows)  // larger T: sgemm threads itself
  {
    std::vector<float> panel(size_t(kMxfp4PanelRows * C));  // f32 [panel rows, C], per thread
#pragma omp for schedule(static)
    for (int64_t p = 0; p < n_panels; ++p) {
      const int64_t r0 = p * kMxfp4PanelRows, n = std::min(kMxfp4PanelRows, R - r0);
      mxfp4_rows_to_f32(mxfp4, r0, n, panel.data());
      const WeightView v{panel.data(), DType::F32, n, C};
      linear_strided(x, C, T, v, y + r0, R, accumulate);
    }
  }
}

}  // namespace ds
