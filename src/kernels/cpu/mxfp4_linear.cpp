#include "kernels/cpu/mxfp4_linear.h"

#include <algorithm>
#include <vector>

#include "core/mxfp4.h"
#include "kernels/cpu/linear.h"

namespace ds::cpu {

void mxfp4_rows_to_f32(const Mxfp4View& w, int64_t r0, int64_t n, float* out) {
  const size_t half = size_t(w.cols / 2), groups = size_t(w.cols / kMxfp4BlockSize), cols = size_t(w.cols);
  for (int64_t r = r0; r < r0 + n; ++r)
    mxfp4_decode_row({w.packed + size_t(r) * half, half}, {w.scale + size_t(r) * groups, groups},
                     {out + size_t(r - r0) * cols, cols});
}

void mxfp4_linear(const float* x, int64_t x_stride, int64_t T, const Mxfp4View& w, float* y, int64_t y_stride,
                  bool accumulate) {
  if (T == 0) return;
  const int64_t R = w.rows, C = w.cols;
  const int64_t n_panels = (R + kMxfp4PanelRows - 1) / kMxfp4PanelRows;
#pragma omp parallel if (T <= kLinearGemvMaxRows)  // larger T: sgemm threads itself
  {
    std::vector<float> panel(size_t(kMxfp4PanelRows * C));  // f32 [panel rows, C], per thread
#pragma omp for schedule(static)
    for (int64_t p = 0; p < n_panels; ++p) {
      const int64_t r0 = p * kMxfp4PanelRows, n = std::min(kMxfp4PanelRows, R - r0);
      mxfp4_rows_to_f32(w, r0, n, panel.data());
      const WeightView v{panel.data(), DType::F32, n, C};
      linear_strided(x, x_stride, T, v, y + r0, y_stride, accumulate);
    }
  }
}

}  // namespace ds::cpu
