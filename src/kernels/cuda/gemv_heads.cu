// Per-head few-row linear (kernels/linear.h linear_few_rows_heads): for every head h,
// y_h [T, out] = x_h [T, in] · W_hᵀ with bf16 W_h [out, in] (rows contiguous, heads sw elements apart)
// and f32 x_h, y_h (x and y advanced by h·sx, h·sy columns): MLA's absorbed W_UKᵀ and W_UV products
// of a decode step in one programmatic launch each, where cuBLASLt needed a cast of x and a product
// that take no part in the PDL chain. A warp streams rpw consecutive rows of one head as one run of
// 32 · kChunks 16-byte chunks (kChunks per lane, all issued before the wait for x); a row's cpr = in / 8
// chunks lie on cpr consecutive lanes (cpr <= 32: 32 / cpr rows per load step) or on cpr / 32 steps of
// the whole warp (cpr > 32).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kWarps = 8, kChunks = 8;

template <int kT>
__global__ void __launch_bounds__(kWarps * 32) gemv_heads_kernel(HeadsLaunch l) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int cpr = int(l.in / 8), rpw = kChunks * 32 / cpr;
  const int64_t warps_per_head = l.out / rpw, gw = int64_t(blockIdx.x) * kWarps + warp;
  const int64_t h = gw / warps_per_head, r0 = (gw % warps_per_head) * rpw;
  if (h >= l.heads) return;
  const __nv_bfloat16* w = static_cast<const __nv_bfloat16*>(l.w) + h * l.sw + r0 * l.in;
  Chunk<__nv_bfloat16> c[kChunks];
#pragma unroll
  for (int u = 0; u < kChunks; ++u) c[u].load(w + (int64_t(u) * 32 + lane) * 8);
  pdl_wait();  // x comes from the kernel before; the weights are in flight
  pdl_trigger();
  const float* x = l.x + h * l.sx;
  float p[kChunks][kT];
#pragma unroll
  for (int u = 0; u < kChunks; ++u) {
    float a[8];
    c[u].get(a);
    const int col = ((u * 32 + lane) % cpr) * 8;
#pragma unroll
    for (int t = 0; t < kT; ++t) {
      float xv[8];
      load8(x + t * l.xs + col, xv);
      float s = 0.0f;
#pragma unroll
      for (int q = 0; q < 8; ++q) s += a[q] * xv[q];
      p[u][t] = s;
    }
  }
  float* y = l.y + h * l.sy + r0;
  if (cpr <= 32) {  // chunk (u, lane) belongs to row u · (32 / cpr) + lane / cpr
#pragma unroll
    for (int u = 0; u < kChunks; ++u)
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        float s = p[u][t];
        for (int o = cpr / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane % cpr == 0) y[t * l.ys + u * (32 / cpr) + lane / cpr] = s;
      }
  } else {  // row q holds steps q · upr .. q · upr + upr - 1
    const int upr = cpr / 32;
    for (int q = 0; q < rpw; ++q)
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < kChunks; ++u)
          if (u / upr == q) s += p[u][t];
        s = warp_sum(s);
        if (lane == 0) y[t * l.ys + q] = s;
      }
  }
}

}  // namespace

bool few_rows_heads_shape_ok(int64_t T, int64_t in, int64_t out) {
  const int64_t cpr = in / 8;
  const bool lanes = cpr >= 1 && cpr <= 32 && 32 % cpr == 0;
  const bool steps = cpr > 32 && cpr % 32 == 0 && kChunks % (cpr / 32) == 0;
  return T >= 1 && T <= 2 && in % 8 == 0 && (lanes || steps) && out % (kChunks * 32 / cpr) == 0;
}

void launch_linear_few_rows_heads(const HeadsLaunch& l) {
  require(few_rows_heads_shape_ok(l.T, l.in, l.out) && l.heads >= 1 && l.xs % 4 == 0 && l.sx % 4 == 0,
          "linear_few_rows_heads (CUDA): 1-2 rows, in / 8 dividing 32 or a multiple of 32 up to 256");
  const int64_t rpw = kChunks * 32 / (l.in / 8), warps = l.heads * (l.out / rpw);
  const dim3 grid(unsigned((warps + kWarps - 1) / kWarps));
  if (l.T == 1)
    launch_pdl(gemv_heads_kernel<1>, grid, dim3(kWarps * 32), 0, l);
  else
    launch_pdl(gemv_heads_kernel<2>, grid, dim3(kWarps * 32), 0, l);
  check_launch("linear_few_rows_heads kernel");
}

}  // namespace ds::cuda
