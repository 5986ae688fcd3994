// Few-row linear (kernels/linear.h linear_few_rows): y [T, out] (+)= x [T, in] · Wᵀ for T <= 8 f32
// rows, W f32 or bf16 read once: one warp per output row, 16-byte weight loads, every row of x at
// once (x stays in L1/L2). The decode steps' projections without a cast of x or a GEMM tile.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kMaxRows = 8;

template <class W, int kRows>
__global__ void __launch_bounds__(256) gemv_kernel(const float* x, int64_t xs, const W* w, int64_t out,
                                                   int64_t in, float* y, int64_t ys, bool accumulate) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * 8 + warp;
  if (o >= out) return;
  const W* wr = w + o * in;
  float acc[kRows] = {};
#pragma unroll 4
  for (int64_t c = lane * 8; c < in; c += 256) {
    float wv[8];
    load8(wr + c, wv);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float xv[8];
      load8(x + r * xs + c, xv);
#pragma unroll
      for (int q = 0; q < 8; ++q) acc[r] += wv[q] * xv[q];
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float sum = warp_sum(acc[r]);
    if (lane == 0) y[r * ys + o] = accumulate ? y[r * ys + o] + sum : sum;
  }
}

template <class W>
void launch_rows(int64_t T, const float* x, int64_t xs, const W* w, int64_t out, int64_t in, float* y,
                 int64_t ys, bool acc) {
  const unsigned grid = unsigned((out + 7) / 8);
  switch (T) {
#define DS_GEMV_CASE(n) \
  case n:               \
    return gemv_kernel<W, n><<<grid, 256>>>(x, xs, w, out, in, y, ys, acc);
    DS_GEMV_CASE(1)
    DS_GEMV_CASE(2)
    DS_GEMV_CASE(3)
    DS_GEMV_CASE(4)
    DS_GEMV_CASE(5)
    DS_GEMV_CASE(6)
    DS_GEMV_CASE(7)
    DS_GEMV_CASE(8)
#undef DS_GEMV_CASE
  }
}

}  // namespace

void launch_linear_few_rows(const float* x, int64_t x_stride, int64_t T, const void* w, bool bf16,
                            int64_t out, int64_t in, float* y, int64_t y_stride, bool accumulate) {
  require(T >= 1 && T <= kMaxRows && in % 8 == 0 && x_stride % 4 == 0,
          "linear_few_rows (CUDA): 1..8 rows, in % 8 == 0, row stride % 4 == 0");
  if (bf16)
    launch_rows(T, x, x_stride, static_cast<const __nv_bfloat16*>(w), out, in, y, y_stride, accumulate);
  else
    launch_rows(T, x, x_stride, static_cast<const float*>(w), out, in, y, y_stride, accumulate);
  check_launch("linear_few_rows kernel");
}

}  // namespace ds::cuda
