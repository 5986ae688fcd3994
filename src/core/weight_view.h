// WeightView: a non-owning, device-aware view of a row-major weight matrix [rows, cols] stored as
// F32 or BF16 (host checkpoint tensors are used in place; device copies live in device memory).
// Kernels never depend on src/model; callers build views.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/tensor_view.h"

namespace ds {

struct WeightView {
  const void* data = nullptr;  // F32 or BF16 [rows, cols], row-major, contiguous
  DType dtype = DType::F32;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features
  Device device = Device::Cpu;

  int64_t numel() const { return rows * cols; }
  // Element (r, c) of a host weight as f32 (exact for BF16). No bounds check: tests and slow paths.
  float at(int64_t r, int64_t c) const;
  // Row r as a view of one row [1, cols].
  WeightView row_view(int64_t r) const;
  // Rows [r0, r0 + n) as a view [n, cols].
  WeightView slice_rows(int64_t r0, int64_t n) const;
};

// Throws ds::Error unless data != null, dtype is F32|BF16 and rows, cols > 0. `what` names the
// weight in the message.
void check_weight(const WeightView& w, const char* what);

// Rows [r0, r0 + n) of a host weight converted to f32, written to out f32 [n, cols].
void weight_rows_to_f32(const WeightView& w, int64_t r0, int64_t n, float* out);

// The whole host matrix as f32 [rows * cols] (small parameters: norm weights, conv taps, biases).
std::vector<float> to_f32(const WeightView& w);

}  // namespace ds
