#include "kernels/cpu/linear.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

namespace {

// ---- GEMV path (T <= kLinearGemvMaxRows): bf16/f32 weights, few activation rows ----------------
// The ISA body (isa/linear_body.h) computes all T activation rows for a range of output rows; the
// threads split the output rows in blocks of 4, each read from memory once.
// ---- GEMM path (more rows): each thread owns a contiguous range of output features (a multiple
// of the body's micro-tile rows); the body (isa/gemm_body.h) widens bf16 weights as it goes.
constexpr int64_t kRowBlock = 4;

enum class Path { Auto, Gemv, Gemm };  // Auto: GEMV for T <= kLinearGemvMaxRows, else GEMM

// Thread `id` of `nt`: its share of one product's output rows. scratch: the GEMM body's buffer,
// allocated on first use.
void linear_slice(const KernelTable& k, const LinearJob& j, Path path, int64_t id, int64_t nt,
                  std::unique_ptr<float[]>& scratch) {
  const WeightView& w = j.w;
  if (j.T <= 0) return;
  const bool bf16 = w.dtype == DType::BF16;
  const void* wd = w.data;
  if (path == Path::Gemv || (path == Path::Auto && j.T <= kLinearGemvMaxRows)) {
    const int64_t n_blocks = (w.rows + kRowBlock - 1) / kRowBlock;
    const int64_t r0 = std::min(w.rows, n_blocks * id / nt * kRowBlock);
    const int64_t r1 = std::min(w.rows, n_blocks * (id + 1) / nt * kRowBlock);
    if (r0 >= r1) return;
    if (bf16)
      k.gemv_bf16(j.x, j.x_stride, j.T, static_cast<const uint16_t*>(wd), w.cols, r0, r1, j.y, j.y_stride,
                  j.accumulate);
    else
      k.gemv_f32(j.x, j.x_stride, j.T, static_cast<const float*>(wd), w.cols, r0, r1, j.y, j.y_stride,
                 j.accumulate);
    return;
  }
  const int64_t per = ((w.rows + nt - 1) / nt + k.gemm_nr - 1) / k.gemm_nr * k.gemm_nr;
  const int64_t r0 = std::min(w.rows, id * per), r1 = std::min(w.rows, r0 + per);
  if (r0 >= r1) return;
  if (!scratch)
    scratch.reset(new float[size_t(k.gemm_scratch_floats)]);  // uninitialised: the body writes first
  if (bf16)
    k.gemm_bf16(j.x, j.x_stride, j.T, static_cast<const uint16_t*>(wd), w.cols, r0, r1, j.y, j.y_stride,
                j.accumulate, scratch.get());
  else
    k.gemm_f32(j.x, j.x_stride, j.T, static_cast<const float*>(wd), w.cols, r0, r1, j.y, j.y_stride,
               j.accumulate, scratch.get());
}

// Below ~512K MACs (~1 MB of bf16 weights at T = 1, ~25 us) a fork/join is not worth it; a single
// matrix also needs more than one row block (GEMV) or micro-tile group (GEMM) per thread.
bool worth_threads(const KernelTable& k, std::span<const LinearJob> jobs) {
  int64_t macs = 0, widest = 0;
  for (const LinearJob& j : jobs) {
    macs += j.T * j.w.rows * j.w.cols;
    widest = std::max(widest, j.w.rows);
  }
  return macs >= (int64_t(1) << 19) &&
         (jobs.size() > 1 || widest >= 2 * std::max<int64_t>(kRowBlock, k.gemm_nr));
}

void run_jobs(std::span<const LinearJob> jobs, Path path = Path::Auto) {
  const KernelTable& k = kernels();
#pragma omp parallel if (worth_threads(k, jobs))
  {
    const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    std::unique_ptr<float[]> scratch;
    for (const LinearJob& j : jobs) linear_slice(k, j, path, id, nt, scratch);
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

void linear_batch(std::span<const LinearJob> jobs) {
  for (const LinearJob& j : jobs) check_linear(j.x, j.x_stride, j.T, j.w, j.y, j.y_stride);
  run_jobs(jobs);
}

void linear_strided(const float* x, int64_t x_stride, int64_t T, const WeightView& w, float* y,
                    int64_t y_stride, bool accumulate) {
  check_linear(x, x_stride, T, w, y, y_stride);
  const LinearJob j{x, x_stride, T, w, y, y_stride, accumulate};
  run_jobs({&j, 1});
}

void linear(const float* x, int64_t T, const WeightView& w, float* y) {
  linear_strided(x, w.cols, T, w, y, w.rows, false);
}

void linear_accumulate(const float* x, int64_t T, const WeightView& w, float* y) {
  linear_strided(x, w.cols, T, w, y, w.rows, true);
}

void linear_gemv(const float* x, int64_t T, const WeightView& w, float* y) {
  check_linear(x, w.cols, T, w, y, w.rows);
  const LinearJob j{x, w.cols, T, w, y, w.rows, false};
  run_jobs({&j, 1}, Path::Gemv);
}

void linear_gemm(const float* x, int64_t T, const WeightView& w, float* y) {
  check_linear(x, w.cols, T, w, y, w.rows);
  const LinearJob j{x, w.cols, T, w, y, w.rows, false};
  run_jobs({&j, 1}, Path::Gemm);
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
