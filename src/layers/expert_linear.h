// ExpertLinear: one projection weight, y = x·Wᵀ with W [out, in] either dense (a WeightView,
// F32/BF16) or MXFP4 (compressed-tensors mxfp4-pack-quantized routed experts). Owns the on-the-fly
// MXFP4 GEMM: rows are dequantised panel by panel into a small f32 buffer and multiplied there;
// the whole matrix is never expanded.
#pragma once

#include <cstdint>

#include "kernels/cpu/weight_view.h"

namespace ds {

// MXFP4 matrix [rows, cols]: two E2M1 values per byte, one E8M0 scale byte per 32 inputs.
struct Mxfp4View {
  const uint8_t* packed = nullptr;  // u8 [rows, cols/2]  (weight_packed)
  const uint8_t* scale = nullptr;   // u8 [rows, cols/32] (weight_scale, E8M0: 2^(s-127))
  int64_t rows = 0, cols = 0;       // logical shape; cols % 32 == 0
};

// Inner panel height of the MXFP4 GEMM (rows dequantised at once, per thread).
inline constexpr int64_t kMxfp4PanelRows = 64;

struct ExpertLinear {
  WeightView dense;  // used when mxfp4.packed == nullptr
  Mxfp4View mxfp4;

  ExpertLinear() = default;
  ExpertLinear(const WeightView& w) : dense(w) {}  // NOLINT: implicit, a dense weight is an ExpertLinear
  ExpertLinear(const Mxfp4View& w) : mxfp4(w) {}   // NOLINT

  bool is_mxfp4() const { return mxfp4.packed != nullptr; }
  int64_t rows() const { return is_mxfp4() ? mxfp4.rows : dense.rows; }  // out features
  int64_t cols() const { return is_mxfp4() ? mxfp4.cols : dense.cols; }  // in features
  void validate(const char* what) const;  // throws ds::Error naming `what` and the shape

  // x f32 [T, cols] -> y f32 [T, rows], overwritten or (accumulate) added to. x and y must not alias.
  void forward(const float* x, int64_t T, float* y, bool accumulate = false) const;
};

// Rows [r0, r0 + n) of an MXFP4 matrix as f32 [n, cols].
void mxfp4_rows_to_f32(const Mxfp4View& w, int64_t r0, int64_t n, float* out);

}  // namespace ds
