// Linear layer (one interface for every device): y [T, out] = x [T, in] · Wᵀ, or y += x · Wᵀ,
// with W a WeightView [out, in] (F32 or BF16). x and y are 2-D row views (unit column stride, any
// row stride >= columns, e.g. a column slice of a wider matrix) on the weight's device, not
// overlapping. CPU: f32 activations. CUDA (cuBLASLt, f32 accumulation): x has the weight's dtype,
// y is f32 or bf16.
#pragma once

#include <span>

#include "core/tensor_view.h"
#include "core/weight_view.h"

namespace ds {

// Throws ds::Error on a shape, dtype or device mismatch (naming the sizes).
void linear(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate = false);

// One product of linear_batch: y (+)= x · wᵀ, the same views as linear().
struct LinearJob {
  TensorView x;
  WeightView w;
  TensorView y;
  bool accumulate = false;
};

// Independent products (e.g. an MoE layer's routed experts) in one call, with the results of
// linear() per job. The CPU runs them in one parallel region (no fork/join per matrix). Outputs
// must not overlap each other or any input. Checks every job before running any.
void linear_batch(std::span<const LinearJob> jobs);

// The same product for `heads` heads (e.g. MLA's absorbed per-head projections): for h in
// [0, heads), y_h (+)= x_h · W_hᵀ where x_h, W_h and y_h are x, w and y advanced by h times their
// head strides (elements); x, w, y describe head 0 as in linear(). CUDA: one strided-batched
// cuBLASLt product; the CPU runs linear() per head (the reference).
struct HeadStrides {
  int64_t x = 0, w = 0, y = 0;
};
void linear_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                  const HeadStrides& stride, bool accumulate = false);

// linear_heads for 1-2 f32 rows with BF16 W on CUDA (MLA's absorbed per-head products at decode):
// one programmatic-dependent launch of a few-row kernel, no cast of x and no cuBLASLt (which take no
// part in the decode graph's PDL chain); y = (no accumulate). The CPU runs linear_heads (the reference).
// Fits: x f32 of 1-2 rows, in = w.cols with in / 8 dividing 32 or a multiple of 32 up to 256, w.rows a
// multiple of a warp's rows (8 · 32 · 8 / in), 16-byte aligned x, W and strides.
bool linear_few_rows_heads_fits(const TensorView& x, const WeightView& w, const HeadStrides& stride);
void linear_few_rows_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                           const HeadStrides& stride);

// y (+)= x · Wᵀ for a few f32 rows (decode steps) with W F32 or BF16: x stays f32 on every device.
// CUDA: W read once by a warp-per-output-row kernel, all rows at once (no cast of x, no GEMM
// tile); the CPU runs linear() (the reference). Needs x.rows <= kLinearFewRows, in % 8 == 0 and
// a row stride of x that is a multiple of 4 on CUDA (linear_few_rows_fits).
constexpr int64_t kLinearFewRows = 8;
bool linear_few_rows_fits(const TensorView& x, const WeightView& w);
void linear_few_rows(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate = false);

// Several few-row products over the same rows x (e.g. a layer's projections of its normed input):
// y_j (+)= x · W_jᵀ for each job, every W_j of one dtype with x's width, outputs not overlapping each
// other or x. CUDA: one launch for all of them; the CPU runs linear() per job (the reference). At most
// kLinearFewRowsJobs jobs, each fitting linear_few_rows. A job may bring its own input rows (FewRowsJob::x:
// the low-rank second halves of two projections in one launch), of x's row count and width.
struct FewRowsJob {
  WeightView w;
  TensorView y;
  bool accumulate = false;
  TensorView x = {};  // this job's own input rows (same row count; no data: the call's x)
};
constexpr int kLinearFewRowsJobs = 8;
void linear_few_rows_multi(const TensorView& x, std::span<const FewRowsJob> jobs);

// A GLU's down projection of a few rows: y (+)= (silu(gate) ⊙ up) · Wᵀ, gate and up f32 [T, in] as x
// of linear_few_rows (both must fit it). CUDA: the product formed while the rows are loaded (no
// intermediate, one launch); the CPU runs silu_mul and linear() (the reference).
void linear_few_rows_glu(const TensorView& gate, const TensorView& up, const WeightView& w,
                         const TensorView& y, bool accumulate = false);

}  // namespace ds
