// Expert linear layer (one interface for every device; GluMlp projections and routed experts): y [T, out] = x
// [T, in] · Wᵀ with W either dense (a WeightView, F32/BF16) or MXFP4 (compressed-tensors
// mxfp4-pack-quantized: two E2M1 codes per byte, one E8M0 scale per 32 inputs, decoded by core/mxfp4.h). The
// MXFP4 matrix is never expanded: implementations dequantise a few rows at a time inside the GEMM.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"
#include "core/weight_view.h"

namespace ds {

// MXFP4 matrix [rows, cols]: two E2M1 values per byte, one E8M0 scale byte per 32 inputs.
struct Mxfp4View {
  const uint8_t* packed = nullptr;  // u8 [rows, cols/2]  (weight_packed)
  const uint8_t* scale = nullptr;   // u8 [rows, cols/32] (weight_scale, E8M0: 2^(s-127))
  int64_t rows = 0, cols = 0;       // logical shape; cols % 32 == 0
  Device device = Device::Cpu;
};

struct ExpertLinear {
  WeightView dense;  // used when mxfp4.packed == nullptr
  Mxfp4View mxfp4;

  ExpertLinear() = default;
  ExpertLinear(const WeightView& w) : dense(w) {}  // NOLINT: implicit, a dense weight is an ExpertLinear
  ExpertLinear(const Mxfp4View& w) : mxfp4(w) {}   // NOLINT

  bool is_mxfp4() const { return mxfp4.packed != nullptr; }
  int64_t rows() const { return is_mxfp4() ? mxfp4.rows : dense.rows; }  // out features
  int64_t cols() const { return is_mxfp4() ? mxfp4.cols : dense.cols; }  // in features
  Device device() const { return is_mxfp4() ? mxfp4.device : dense.device; }
  void validate(const char* what) const;  // throws ds::Error naming `what` and the shape
};

// x f32 [T, cols] -> y f32 [T, rows], overwritten or (accumulate) added to; row views on w's
// device, not overlapping.
void expert_linear(const TensorView& x, const ExpertLinear& w, const TensorView& y, bool accumulate = false);

// The whole MXFP4 matrix decoded into out (F32 or BF16 [rows, cols], contiguous, on w's device), bit for
// bit core/mxfp4's values on every device (bf16 holds every E2M1 code times an E8M0 scale exactly);
// the decoding check of the kernels that dequantise inside their products.
void mxfp4_dequant(const Mxfp4View& w, const TensorView& out);

}  // namespace ds
