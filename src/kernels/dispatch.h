// Internal to src/kernels: argument checks shared by the interface dispatchers, and the error for
// an operation asked to run on a device it has no implementation for.
#pragma once

#include "core/check.h"
#include "core/tensor_view.h"

namespace ds::detail {

// Throws: "<op>: no <device> implementation (...)". For CUDA on a CPU-only build it says so.
[[noreturn]] void no_backend(const char* op, Device device);

// A 2-D f32 row view [rows, cols] (unit column stride); `what` names it in errors.
void check_rows(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t cols);

// A 2-D row view [rows, cols] of F32 or BF16 (CUDA implementations take both).
void check_rows_f32_or_bf16(const char* op, const char* what, const TensorView& v, int64_t rows,
                            int64_t cols);

// A contiguous view of `n` elements of `dtype`.
void check_flat(const char* op, const char* what, const TensorView& v, int64_t n, DType dtype = DType::F32);

#ifdef DS_HAVE_CUDA
inline constexpr bool kHaveCuda = true;
#else
inline constexpr bool kHaveCuda = false;
#endif

}  // namespace ds::detail
