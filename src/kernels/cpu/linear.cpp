#include "kernels/cpu/linear.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

namespace {

// ---- GEMV path: bf16/f32 weights, few activation rows -------------------------------------
// The ISA body (isa/linear_body.h) computes all T activation rows for a range of output rows; the
// threads split the output rows in blocks of 4, each read from memory once.
constexpr int64_t kRowBlock = 4;

void gemv_dispatch(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                   int64_t y_stride, bool acc) {
  const cpu::KernelTable& k = cpu::kernels();
  const int64_t n_blocks = (w.rows + kRowBlock - 1) / kRowBlock;
  // Below ~512K MACs (~1 MB of bf16 weights, ~25 us) a fork/join is not worth it.
  const bool parallel = w.rows * w.cols * T >= (int64_t(1) << 19) && n_blocks > 1;
#pragma omp parallel if (parallel)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t b0 = n_blocks * id / nt, b1 = n_blocks * (id + 1) / nt;
    const int64_t r0 = std::min(w.rows, b0 * kRowBlock), r1 = std::min(w.rows, b1 * kRowBlock);
    if (r0 < r1) {
      if (w.dtype == DType::BF16)
        k.gemv_bf16(x, x_stride, T, static_cast<const uint16_t*>(w.data), w.cols, r0, r1, y, y_stride, acc);
      else
        k.gemv_f32(x, x_stride, T, static_cast<const float*>(w.data), w.cols, r0, r1, y, y_stride, acc);
    }
  }
}

// ---- GEMM path: more activation rows ------------------------------------------------------
// Each thread owns a contiguous range of output features (a multiple of the body's micro-tile
// rows); the body (isa/gemm_body.h) widens bf16 weights block by block as it goes.
void gemm_dispatch(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                   int64_t y_stride, bool acc) {
  const cpu::KernelTable& k = cpu::kernels();
  const bool parallel = w.rows >= 2 * k.gemm_nr && T * w.rows * w.cols >= (int64_t(1) << 20);
#pragma omp parallel if (parallel)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const int64_t per = ((w.rows + nt - 1) / nt + k.gemm_nr - 1) / k.gemm_nr * k.gemm_nr;
    const int64_t r0 = std::min(w.rows, id * per), r1 = std::min(w.rows, r0 + per);
    if (r0 < r1) {
      std::vector<float> scratch(static_cast<size_t>(k.gemm_scratch_floats));
      if (w.dtype == DType::BF16)
        k.gemm_bf16(x, x_stride, T, static_cast<const uint16_t*>(w.data), w.cols, r0, r1, y, y_stride, acc,
                    scratch.data());
      else
        k.gemm_f32(x, x_stride, T, static_cast<const float*>(w.data), w.cols, r0, r1, y, y_stride, acc,
                   scratch.data());
    }
  }
}

void check_linear(const float* x, int64_t x_stride, int64_t T, const WeightView& w, const float* y,
                  int64_t y_stride) {
  check_weight(w, "linear");
  DS_CHECK(T >= 0, "linear: negative row count {}", T);
  DS_CHECK(x_stride >= w.cols && y_stride >= w.rows, "linear: strides x={} y={} below shape [{}, {}]",
           x_stride, y_stride, w.rows, w.cols);
  DS_CHECK(T == 0 || (x != nullptr && y != nullptr), "linear: null activation pointer");
  DS_CHECK(w.cols <= (int64_t(1) << 30) && w.rows <= (int64_t(1) << 30) && T <= (int64_t(1) << 30),
           "linear: shape [{}, {}] x {} rows too large", w.rows, w.cols, T);
}

}  // namespace

void linear_strided(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                    int64_t y_stride, bool accumulate) {
  check_linear(x, x_stride, T, w, y, y_stride);
  if (T == 0) return;
  if (T <= kLinearGemvMaxRows)
    gemv_dispatch(x, x_stride, T, w, y, y_stride, accumulate);
  else
    gemm_dispatch(x, x_stride, T, w, y, y_stride, accumulate);
}

void linear(const float* x, int64_t T, const WeightView& w, float* y) {
  linear_strided(x, w.cols, T, w, y, w.rows, false);
}

void linear_accumulate(const float* x, int64_t T, const WeightView& w, float* y) {
  linear_strided(x, w.cols, T, w, y, w.rows, true);
}

void linear_gemv(const float* x, int64_t T, const WeightView& w, float* y) {
  check_linear(x, w.cols, T, w, y, w.rows);
  if (T > 0) gemv_dispatch(x, w.cols, T, w, y, w.rows, false);
}

void linear_gemm(const float* x, int64_t T, const WeightView& w, float* y) {
  check_linear(x, w.cols, T, w, y, w.rows);
  if (T > 0) gemm_dispatch(x, w.cols, T, w, y, w.rows, false);
}

void linear_ref(const float* x, int64_t T, const WeightView& w, float* y) {
  check_linear(x, w.cols, T, w, y, w.rows);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = 0.0;
      for (int64_t c = 0; c < w.cols; ++c) acc += double(x[t * w.cols + c]) * double(w.at(r, c));
      y[t * w.rows + r] = float(acc);
    }
}

}  // namespace ds::cpu
