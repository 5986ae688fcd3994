// CPU MXFP4 GEMM: rows are dequantised panel by panel (kMxfp4PanelRows at a time, per thread)
// into a small f32 buffer and multiplied there by the CPU linear kernels.
#pragma once

#include <cstdint>

#include "kernels/expert_linear.h"

namespace ds::cpu {

// Inner panel height of the MXFP4 GEMM (rows dequantised at once, per thread).
inline constexpr int64_t kMxfp4PanelRows = 64;

// Rows [r0, r0 + n) of an MXFP4 matrix as f32 [n, cols].
void mxfp4_rows_to_f32(const Mxfp4View& w, int64_t r0, int64_t n, float* out);

// x f32 [T, cols] (row stride x_stride) -> y f32 [T, rows] (row stride y_stride), overwritten or
// (accumulate) added to.
void mxfp4_linear(const float* x, int64_t x_stride, int64_t T, const Mxfp4View& w, float* y, int64_t y_stride,
                  bool accumulate);

}  // namespace ds::cpu
