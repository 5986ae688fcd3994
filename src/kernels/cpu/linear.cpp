#include "kernels/cpu/linear.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>
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

// ---- GEMM path: OpenBLAS sgemm per thread on f32 weight panels -----------------------------
// OpenBLAS runs single-threaded (set once) and our OpenMP threads split the output features:
// one thread pool only, so OpenBLAS's own pool never spins against OpenMP's on this 2-core box.
// Each thread converts its bf16 weight rows in panels of ~kPanelBytes (L2-sized) and calls sgemm.
constexpr int64_t kPanelBytes = int64_t(512) << 10;

void blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void gemm_rows(const float* x, int64_t x_stride, int64_t T, const WeightView& w, int64_t r_begin,
               int64_t r_end, float* y, int64_t y_stride, float beta, std::vector<float>& panel) {
  if (w.dtype == DType::F32) {
    const float* wp = static_cast<const float*>(w.data) + r_begin * w.cols;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(r_end - r_begin), int(w.cols), 1.0f, x,
                int(x_stride), wp, int(w.cols), beta, y + r_begin, int(y_stride));
    return;
  }
  const int64_t panel_rows = std::max<int64_t>(16, kPanelBytes / (4 * w.cols));
  panel.resize(size_t(std::min(panel_rows, r_end - r_begin) * w.cols));
  for (int64_t r0 = r_begin; r0 < r_end; r0 += panel_rows) {
    const int64_t nr = std::min(panel_rows, r_end - r0);
    const uint16_t* src = static_cast<const uint16_t*>(w.data) + r0 * w.cols;
    cpu::kernels().bf16_to_f32(src, nr * w.cols, panel.data());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(nr), int(w.cols), 1.0f, x, int(x_stride),
                panel.data(), int(w.cols), beta, y + r0, int(y_stride));
  }
}

void gemm_dispatch(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                   int64_t y_stride, bool acc) {
  blas_single_threaded();
  const float beta = acc ? 1.0f : 0.0f;
  const bool parallel = w.rows >= 32 && T * w.rows * w.cols >= (int64_t(1) << 20);
#pragma omp parallel if (parallel)
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    // Contiguous row ranges, multiples of 16 so sgemm's column tiles stay whole.
    const int64_t per = ((w.rows + nt - 1) / nt + 15) / 16 * 16;
    const int64_t r_begin = std::min(w.rows, id * per), r_end = std::min(w.rows, r_begin + per);
    std::vector<float> panel;
    if (r_begin < r_end) gemm_rows(x, x_stride, T, w, r_begin, r_end, y, y_stride, beta, panel);
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
