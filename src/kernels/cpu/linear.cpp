#include "kernels/cpu/linear.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/simd.h"

namespace ds {

namespace {

// ---- GEMV path: bf16/f32 weights, few activation rows -------------------------------------
// Each task computes a block of kRowBlock output rows for up to kTBlock activation rows at a
// time, holding kRowBlock * kTBlock f32 accumulators in zmm registers. Weights are converted
// bf16 -> f32 exactly (shift) and multiplied in f32 FMA, so results match an f32 GEMM up to the
// summation order.
constexpr int kRowBlock = 4;
constexpr int kTBlock = 4;

inline __m512 load_w16(const uint16_t* p, __mmask16 m) {
  return simd::load_bf16x16(p, m);
}
inline __m512 load_w16(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}

// Writes (or adds) the horizontal sums of 16-lane accumulators.
inline void store_sum(float* dst, __m512 acc, bool accumulate) {
  const float s = _mm512_reduce_add_ps(acc);
  *dst = accumulate ? *dst + s : s;
}

// y[t0..t0+4, r0..r0+4] (+)= x[t, :] · w[r, :]. Sixteen named accumulators: GCC keeps an
// accumulator array in memory (one store per FMA), named variables stay in registers.
template <typename WT>
void gemv_tile_4x4(const float* x, int64_t xs, int64_t t0, const WT* w, int64_t cols, int64_t r0, float* y,
                   int64_t ys, bool accumulate) {
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00,
         a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
  const WT *w0 = w + r0 * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
  const float *x0 = x + t0 * xs, *x1 = x0 + xs, *x2 = x1 + xs, *x3 = x2 + xs;
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? __mmask16(0xffff) : simd::tail_mask(cols - c);
    const __m512 v0 = _mm512_maskz_loadu_ps(m, x0 + c), v1 = _mm512_maskz_loadu_ps(m, x1 + c);
    const __m512 v2 = _mm512_maskz_loadu_ps(m, x2 + c), v3 = _mm512_maskz_loadu_ps(m, x3 + c);
    __m512 wv = load_w16(w0 + c, m);
    a00 = _mm512_fmadd_ps(wv, v0, a00), a01 = _mm512_fmadd_ps(wv, v1, a01);
    a02 = _mm512_fmadd_ps(wv, v2, a02), a03 = _mm512_fmadd_ps(wv, v3, a03);
    wv = load_w16(w1 + c, m);
    a10 = _mm512_fmadd_ps(wv, v0, a10), a11 = _mm512_fmadd_ps(wv, v1, a11);
    a12 = _mm512_fmadd_ps(wv, v2, a12), a13 = _mm512_fmadd_ps(wv, v3, a13);
    wv = load_w16(w2 + c, m);
    a20 = _mm512_fmadd_ps(wv, v0, a20), a21 = _mm512_fmadd_ps(wv, v1, a21);
    a22 = _mm512_fmadd_ps(wv, v2, a22), a23 = _mm512_fmadd_ps(wv, v3, a23);
    wv = load_w16(w3 + c, m);
    a30 = _mm512_fmadd_ps(wv, v0, a30), a31 = _mm512_fmadd_ps(wv, v1, a31);
    a32 = _mm512_fmadd_ps(wv, v2, a32), a33 = _mm512_fmadd_ps(wv, v3, a33);
  }
  float* y0 = y + t0 * ys + r0;
  const __m512 acc[4][4] = {
      {a00, a10, a20, a30}, {a01, a11, a21, a31}, {a02, a12, a22, a32}, {a03, a13, a23, a33}};  // [t][r]
  for (int t = 0; t < 4; ++t)
    for (int r = 0; r < 4; ++r) store_sum(y0 + t * ys + r, acc[t][r], accumulate);
}

// y[t, r0..r0+4] (+)= x[t, :] · w[r, :] for one activation row t.
template <typename WT>
void gemv_tile_4x1(const float* x, int64_t xs, int64_t t, const WT* w, int64_t cols, int64_t r0, float* y,
                   int64_t ys, bool accumulate) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0;  // second set: two independent FMA chains
  const WT *w0 = w + r0 * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
  const float* xt = x + t * xs;
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    const __m512 v = _mm512_loadu_ps(xt + c), u = _mm512_loadu_ps(xt + c + 16);
    a0 = _mm512_fmadd_ps(load_w16(w0 + c, 0xffff), v, a0);
    a1 = _mm512_fmadd_ps(load_w16(w1 + c, 0xffff), v, a1);
    a2 = _mm512_fmadd_ps(load_w16(w2 + c, 0xffff), v, a2);
    a3 = _mm512_fmadd_ps(load_w16(w3 + c, 0xffff), v, a3);
    b0 = _mm512_fmadd_ps(load_w16(w0 + c + 16, 0xffff), u, b0);
    b1 = _mm512_fmadd_ps(load_w16(w1 + c + 16, 0xffff), u, b1);
    b2 = _mm512_fmadd_ps(load_w16(w2 + c + 16, 0xffff), u, b2);
    b3 = _mm512_fmadd_ps(load_w16(w3 + c + 16, 0xffff), u, b3);
  }
  for (; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? __mmask16(0xffff) : simd::tail_mask(cols - c);
    const __m512 v = _mm512_maskz_loadu_ps(m, xt + c);
    a0 = _mm512_fmadd_ps(load_w16(w0 + c, m), v, a0);
    a1 = _mm512_fmadd_ps(load_w16(w1 + c, m), v, a1);
    a2 = _mm512_fmadd_ps(load_w16(w2 + c, m), v, a2);
    a3 = _mm512_fmadd_ps(load_w16(w3 + c, m), v, a3);
  }
  float* yt = y + t * ys + r0;
  store_sum(yt + 0, _mm512_add_ps(a0, b0), accumulate);
  store_sum(yt + 1, _mm512_add_ps(a1, b1), accumulate);
  store_sum(yt + 2, _mm512_add_ps(a2, b2), accumulate);
  store_sum(yt + 3, _mm512_add_ps(a3, b3), accumulate);
}

// One output row r, one activation row t (edges).
template <typename WT>
void gemv_tile_1x1(const float* x, int64_t xs, int64_t t, const WT* w, int64_t cols, int64_t r, float* y,
                   int64_t ys, bool accumulate) {
  __m512 a = _mm512_setzero_ps();
  const WT* wr = w + r * cols;
  const float* xt = x + t * xs;
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? __mmask16(0xffff) : simd::tail_mask(cols - c);
    a = _mm512_fmadd_ps(load_w16(wr + c, m), _mm512_maskz_loadu_ps(m, xt + c), a);
  }
  store_sum(y + t * ys + r, a, accumulate);
}

// All activation rows for output rows [r0, r0 + nr), nr <= kRowBlock: each weight row block is
// read from memory once; 4-token tiles re-read it from L1. (Tried and measured slower for T = 16:
// widening the bf16 block once into an f32 buffer, and column chunking to keep x in L1.)
template <typename WT>
void gemv_rows(const float* x, int64_t xs, int64_t T, const WT* w, int64_t cols, int64_t r0, int64_t nr,
               float* y, int64_t ys, bool acc) {
  if (nr < kRowBlock) {
    for (int64_t r = r0; r < r0 + nr; ++r)
      for (int64_t t = 0; t < T; ++t) gemv_tile_1x1(x, xs, t, w, cols, r, y, ys, acc);
    return;
  }
  int64_t t = 0;
  for (; t + kTBlock <= T; t += kTBlock) gemv_tile_4x4(x, xs, t, w, cols, r0, y, ys, acc);
  for (; t < T; ++t) gemv_tile_4x1(x, xs, t, w, cols, r0, y, ys, acc);
}

template <typename WT>
void gemv_impl(const float* x, int64_t x_stride, int64_t T, const WT* w, int64_t rows, int64_t cols, float* y,
               int64_t y_stride, bool acc) {
  const int64_t n_blocks = (rows + kRowBlock - 1) / kRowBlock;
  // Below ~512K MACs (~1 MB of bf16 weights, ~25 us) a fork/join is not worth it.
  const bool parallel = rows * cols * T >= (int64_t(1) << 19) && n_blocks > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t r0 = b * kRowBlock;
    const int64_t nr = std::min<int64_t>(kRowBlock, rows - r0);
    gemv_rows(x, x_stride, T, w, cols, r0, nr, y, y_stride, acc);
  }
}

void gemv_dispatch(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                   int64_t y_stride, bool acc) {
  if (w.dtype == DType::BF16)
    gemv_impl(x, x_stride, T, static_cast<const uint16_t*>(w.data), w.rows, w.cols, y, y_stride, acc);
  else
    gemv_impl(x, x_stride, T, static_cast<const float*>(w.data), w.rows, w.cols, y, y_stride, acc);
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
    const int64_t count = nr * w.cols;
    for (int64_t i = 0; i < count; i += 16) {
      const __mmask16 m = count - i >= 16 ? __mmask16(0xffff) : simd::tail_mask(count - i);
      _mm512_mask_storeu_ps(panel.data() + i, m, load_w16(src + i, m));
    }
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

}  // namespace ds
