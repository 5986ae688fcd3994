// Internal to src/kernels/cuda: plain launch descriptions of the row-wise kernels (no project
// headers, so that the .cu needs no fmt). Rows are `rows` × `dim` with row strides in elements.
#pragma once

#include <cstdint>

namespace ds::cuda {

struct RowsArg {
  const void* x = nullptr;
  int64_t x_stride = 0;
  const void* gate = nullptr;  // second input (gate / up), same dtype, or nullptr
  int64_t gate_stride = 0;
  void* y = nullptr;
  int64_t y_stride = 0;
  bool bf16 = false;  // dtype of x, gate and y
  int64_t rows = 0, dim = 0;
  const float* weight = nullptr;  // f32 [dim] or nullptr (= ones)
  float eps = 0.0f;
};

enum class RowOp { RmsNorm, RmsNormGatedSigmoid, L2Norm, SiluMul, Sigmoid, Silu };

void launch_rows(RowOp op, const RowsArg& a);

// x += r, then y = rmsnorm(x) · weight (weight nullptr = ones), f32 rows. false (nothing launched)
// when the shape or alignment does not fit the one-pass kernel (dim % 4, dim <= 4096, 16 bytes).
struct AddNormArg {
  const float* r;
  int64_t r_stride;
  float* x;
  int64_t x_stride;
  float* y;
  int64_t y_stride;
  const float* weight;
  int64_t rows, dim;
  float eps;
};
bool launch_add_rmsnorm(const AddNormArg& a);

}  // namespace ds::cuda
