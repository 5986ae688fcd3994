// Linear layer y[T, out] = x[T, in] · Wᵀ with W a WeightView [out, in] (F32 or BF16), f32 compute.
// Dispatch: T <= kLinearGemvMaxRows uses a bandwidth-bound GEMV (bf16 -> f32 convert + f32 FMA,
// OpenMP over output rows); larger T uses the GEMM body (isa/gemm_body.h). linear_batch runs many
// independent products in one parallel region. linear_ref is the plain double-accumulating oracle
// the tests compare against.
#pragma once

#include <cstdint>
#include <span>

#include "core/weight_view.h"

namespace ds::cpu {

inline constexpr int64_t kLinearGemvMaxRows = 16;

// x f32 [T, in] (row stride in), y f32 [T, out] (row stride out, overwritten). T >= 0.
// Throws ds::Error if w is invalid. x and y must not alias.
void linear(const float* x, int64_t T, const WeightView& w, float* y);

// Same contract as linear(), but y += x · Wᵀ (residual / expert accumulation).
void linear_accumulate(const float* x, int64_t T, const WeightView& w, float* y);

// Strided variant: x row r at x + r * x_stride, y row r at y + r * y_stride (elements).
void linear_strided(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                    int64_t y_stride, bool accumulate);

// One product of a batch: y[T, w.rows] (+)= x[T, w.cols] · wᵀ, rows x_stride / y_stride apart.
struct LinearJob {
  const float* x = nullptr;
  int64_t x_stride = 0;
  int64_t T = 0;
  WeightView w;
  float* y = nullptr;
  int64_t y_stride = 0;
  bool accumulate = false;
};

// Runs independent products (e.g. the routed experts of an MoE layer) in one parallel region:
// every thread takes its share of the output rows of each job in turn, with no fork/join between
// jobs. Same results as linear_strided per job. Outputs must not overlap each other or any input.
void linear_batch(std::span<const LinearJob> jobs);

// Force a path (for tests and benchmarks). Same results as linear() up to f32 rounding.
void linear_gemv(const float* x, int64_t T, const WeightView& w, float* y);  // any T
void linear_gemm(const float* x, int64_t T, const WeightView& w, float* y);  // any T

// Reference: naive loops, double accumulation, single thread.
void linear_ref(const float* x, int64_t T, const WeightView& w, float* y);

}  // namespace ds::cpu
