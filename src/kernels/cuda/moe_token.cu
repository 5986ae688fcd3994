// Token-major routed + shared experts of a few tokens (kernels/moe_token.h): two launches, no
// grouping and no combine kernel. gate/up: each (token, term) pair reads its expert's gate and up
// rows; down: each (token, output row) sums its terms' down rows times the mixture weights, so the
// combine and the shared expert's down product are part of it. Weights f32 or bf16 streamed with
// 16-byte loads that skip L1, several chunks of all of a warp's rows issued before any is used.
// Both launched with PDL (pdl.cuh): each lets the next kernel launch once its own wait has passed. The
// down kernel issues its first terms' weight loads before its wait: their expert ids come from the
// route kernel two launches back, complete once the gate/up kernel (triggering only after its wait)
// has let the down kernel start.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/expert_act.cuh"
#include "kernels/cuda/moe_token_launch.h"
#include "kernels/cuda/moe_token_out.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kGuWarps = 4, kGuRows = 1, kGuU = 9;   // gate/up: rows per warp, 256-column blocks per pass
constexpr int kDnWarps = 4, kDnTerms = 3, kDnU = 4;  // down: terms and 256-column blocks per pass

__device__ __forceinline__ int terms(const TokenGluLaunch& l) {
  return int(l.k) + (l.shared_gate != nullptr ? 1 : 0);
}

// Term j of token t: routed expert j (< k) or the shared expert (j == k).
template <class W>
__device__ __forceinline__ const W* term_matrix(const TokenGluLaunch& l, int64_t t, int j, int which) {
  if (j < l.k) return static_cast<const W*>(l.ptrs[which * l.E + __ldcg(l.expert + t * l.k + j)]);
  const void* s = which == 0 ? l.shared_gate : which == 1 ? l.shared_up : l.shared_down;
  return static_cast<const W*>(s);
}

template <class W>
__global__ void __launch_bounds__(kGuWarps * 32) token_gate_up_kernel(TokenGluLaunch l) {
  const int ks = terms(l);
  const int64_t t = blockIdx.x / ks;
  const int j = int(blockIdx.x % ks);
  pdl_wait();  // the expert ids and x come from the kernels before; then the next kernel may launch
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i0 = (int64_t(blockIdx.y) * kGuWarps + warp) * kGuRows;
  if (i0 >= l.I) return;
  const W* g = term_matrix<W>(l, t, j, 0);
  const W* u = term_matrix<W>(l, t, j, 1);
  const W* gr[kGuRows];
  const W* ur[kGuRows];
#pragma unroll
  for (int r = 0; r < kGuRows; ++r) {
    const int64_t i = min(i0 + r, l.I - 1);
    gr[r] = g + i * l.D, ur[r] = u + i * l.D;
  }
  const float* x = l.x + t * l.x_stride;
  float ag[kGuRows] = {}, au[kGuRows] = {};
  for (int64_t c0 = lane * 8; c0 < l.D; c0 += 256 * kGuU) {
    Chunk<W> wg[kGuRows][kGuU], wu[kGuRows][kGuU];
#pragma unroll
    for (int v = 0; v < kGuU; ++v)
#pragma unroll
      for (int r = 0; r < kGuRows; ++r) {
        if (c0 + v * 256 < l.D) {
          wg[r][v].load(gr[r] + c0 + v * 256);
          wu[r][v].load(ur[r] + c0 + v * 256);
        } else {
          wg[r][v].zero();
          wu[r][v].zero();
        }
      }
#pragma unroll
    for (int v = 0; v < kGuU; ++v) {
      const int64_t c = c0 + v * 256;
      if (c >= l.D) break;
      float xv[8];
      load8(x + c, xv);
#pragma unroll
      for (int r = 0; r < kGuRows; ++r) {
        float a[8], b[8];
        wg[r][v].get(a);
        wu[r][v].get(b);
#pragma unroll
        for (int q = 0; q < 8; ++q) ag[r] += a[q] * xv[q], au[r] += b[q] * xv[q];
      }
    }
  }
  float* h = l.h + (t * ks + j) * l.h_stride;
#pragma unroll
  for (int r = 0; r < kGuRows; ++r) {
    const float sg = warp_sum(ag[r]), su = warp_sum(au[r]);
    if (lane == 0 && i0 + r < l.I)
      h[i0 + r] = l.situ ? situ_glu(sg, su, l.beta, l.linear_beta) : sg / (1.0f + expf(-sg)) * su;
  }
}

template <class W>
__global__ void __launch_bounds__(kDnWarps * 32) token_down_kernel(TokenGluLaunch l) {
  const int ks = terms(l);
  const int64_t t = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t d = int64_t(blockIdx.y) * kDnWarps + warp;
  if (d >= l.D) return;
  // Lane j < ks looks up term j's down matrix and mixture weight once (the dependent expert id ->
  // pointer loads of all terms in flight together); the groups below take them by shuffle. Before the
  // wait for the gate/up kernel (PDL): the ids and weights of the route kernel through L2 (pdl.cuh).
  const W* my_w = nullptr;
  float my_wt = 0.0f;
  if (lane < ks) {
    my_w = term_matrix<W>(l, t, lane, 2);
    my_wt = lane < l.k ? __ldcg(l.weight + t * l.k + lane) : 1.0f;
  }
  float acc = 0.0f;
  for (int j0 = 0; j0 < ks; j0 += kDnTerms) {
    const W* wr[kDnTerms];
    float wt[kDnTerms];
#pragma unroll
    for (int s = 0; s < kDnTerms; ++s) {
      const int j = min(j0 + s, ks - 1);
      wr[s] = reinterpret_cast<const W*>(
                  __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(my_w), j)) +
              d * l.I;
      const float w = __shfl_sync(0xffffffffu, my_wt, j);
      wt[s] = j0 + s >= ks ? 0.0f : w;
    }
    for (int64_t c0 = lane * 8; c0 < l.I; c0 += 256 * kDnU) {
      Chunk<W> w[kDnTerms][kDnU];
#pragma unroll
      for (int v = 0; v < kDnU; ++v)
#pragma unroll
        for (int s = 0; s < kDnTerms; ++s) {
          if (c0 + v * 256 < l.I && j0 + s < ks)
            w[s][v].load(wr[s] + c0 + v * 256);
          else
            w[s][v].zero();
        }
      // The first terms' rows are in flight before the wait for h.
      if (j0 == 0 && c0 == lane * 8) pdl_wait(), pdl_trigger();
#pragma unroll
      for (int s = 0; s < kDnTerms; ++s) {
        if (j0 + s >= ks) break;
        const float* h = l.h + (t * ks + j0 + s) * l.h_stride;
        float part = 0.0f;
#pragma unroll
        for (int v = 0; v < kDnU; ++v) {
          const int64_t c = c0 + v * 256;
          if (c >= l.I) break;
          float a[8], hv[8];
          w[s][v].get(a);
          load8(h + c, hv);
#pragma unroll
          for (int q = 0; q < 8; ++q) part += a[q] * hv[q];
        }
        acc += wt[s] * part;
      }
    }
  }
  token_store_row(l, t, d, acc);
}

}  // namespace

void launch_moe_token_glu(const TokenGluLaunch& l) {
  require(l.T >= 1 && l.k >= 1 && l.k < 32 && l.D % 8 == 0 && l.I % 8 == 0 && l.x_stride % 4 == 0 &&
              l.h_stride % 4 == 0 && l.T * (l.k + 1) <= 0x7fffffff &&
              (l.I + kGuWarps * kGuRows - 1) / (kGuWarps * kGuRows) <= 65535 &&
              (l.D + kDnWarps - 1) / kDnWarps <= 65535,
          "moe_token_glu (CUDA): D and I multiples of 8, row strides multiples of 4");
  const int64_t ks = l.k + (l.shared_gate != nullptr ? 1 : 0);
  const dim3 gu(unsigned(l.T * ks), unsigned((l.I + kGuWarps * kGuRows - 1) / (kGuWarps * kGuRows)));
  const dim3 dn(unsigned(l.T), unsigned((l.D + kDnWarps - 1) / kDnWarps));
  if (l.bf16) {
    launch_pdl(token_gate_up_kernel<__nv_bfloat16>, gu, dim3(kGuWarps * 32), 0, l);
    launch_pdl(token_down_kernel<__nv_bfloat16>, dn, dim3(kDnWarps * 32), 0, l);
  } else {
    launch_pdl(token_gate_up_kernel<float>, gu, dim3(kGuWarps * 32), 0, l);
    launch_pdl(token_down_kernel<float>, dn, dim3(kDnWarps * 32), 0, l);
  }
}

}  // namespace ds::cuda
