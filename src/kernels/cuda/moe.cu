// Device MoE kernels (kernels/moe.h): the sigmoid top-k router, the grouping of rows by expert and
// the grouped SiLU-GLU of the active experts. f32 math; weights f32 or bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/moe_launch.h"
#include "kernels/cuda/vec_load.cuh"

namespace ds::cuda {
namespace {

constexpr int kRouteThreads = 256;

__device__ __forceinline__ bool better(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

// One CTA per token. Shared: score[E], sel[E], taken[E] (as floats / ints).
__global__ void route_kernel(const float* logits, const float* bias, int E, int k, bool renormalize,
                             float scaling, int32_t* expert, float* weight) {
  extern __shared__ float sm[];
  float* score = sm;
  float* sel = sm + E;
  int* taken = reinterpret_cast<int*>(sm + 2 * E);
  __shared__ float red_v[kRouteThreads / 32];
  __shared__ int red_i[kRouteThreads / 32];
  __shared__ int chosen[64];
  const int64_t t = blockIdx.x;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    const float s = 1.0f / (1.0f + expf(-logits[t * E + e]));
    score[e] = s;
    sel[e] = s + (bias ? bias[e] : 0.0f);
    taken[e] = 0;
  }
  __syncthreads();
  for (int j = 0; j < k; ++j) {
    float bv = -FLT_MAX;
    int bi = E;
    for (int e = threadIdx.x; e < E; e += blockDim.x)
      if (!taken[e] && (bi == E || better(sel[e], e, bv, bi))) bv = sel[e], bi = e;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (oi != E && (bi == E || better(ov, oi, bv, bi))) bv = ov, bi = oi;
    }
    if (threadIdx.x % 32 == 0) red_v[threadIdx.x / 32] = bv, red_i[threadIdx.x / 32] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
      float v = red_v[0];
      int i = red_i[0];
      for (int w = 1; w < kRouteThreads / 32; ++w)
        if (red_i[w] != E && (i == E || better(red_v[w], red_i[w], v, i))) v = red_v[w], i = red_i[w];
      chosen[j] = i;
      taken[i] = 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += score[chosen[j]];
    const float norm = renormalize && k > 1 ? 1.0f / (sum + 1e-20f) : 1.0f;
    for (int j = 0; j < k; ++j) {
      expert[t * k + j] = chosen[j];
      weight[t * k + j] = score[chosen[j]] * norm * scaling;
    }
  }
}

// One CTA: counts, offsets and the active list.
__global__ void group_count_kernel(const int32_t* expert, int64_t n, int E, int32_t* offsets,
                                   int32_t* active) {
  extern __shared__ int cnt[];
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&cnt[expert[i]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0, n_active = 0;
    for (int e = 0; e < E; ++e) {
      offsets[e] = run;
      if (cnt[e] > 0) active[1 + n_active++] = e;
      run += cnt[e];
    }
    offsets[E] = run;
    active[0] = n_active;
  }
}

// Few rows (n <= kGroupSmallRows, e.g. a decode step): counts, offsets, the active list and every row's
// place in one CTA. Shared: cnt[E], the experts of the n rows.
constexpr int kGroupSmallRows = 1024;
__global__ void __launch_bounds__(1024)
    group_small_kernel(const int32_t* expert, int n, int k, int E, int32_t* offsets, int32_t* active,
                       int32_t* row_token, int32_t* pos) {
  extern __shared__ int gs[];
  int* cnt = gs;
  int* ex = gs + E;
  const int tid = threadIdx.x;
  for (int e = tid; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  for (int i = tid; i < n; i += blockDim.x) {
    ex[i] = expert[i];
    atomicAdd(&cnt[ex[i]], 1);
  }
  __syncthreads();
  if (tid < 32) {  // warp 0: exclusive scans of the counts and of the active flags, lane-contiguous
    const int per = (E + 31) / 32, e0 = tid * per, e1 = min(E, e0 + per);
    int rows = 0, act = 0;
    for (int e = e0; e < e1; ++e) rows += cnt[e], act += cnt[e] > 0;
    int rows_before = rows, act_before = act;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
      const int r = __shfl_up_sync(0xffffffffu, rows_before, o),
                a = __shfl_up_sync(0xffffffffu, act_before, o);
      if (tid >= o) rows_before += r, act_before += a;
    }
    rows_before -= rows, act_before -= act;
    for (int e = e0; e < e1; ++e) {
      offsets[e] = rows_before;
      if (cnt[e] > 0) active[1 + act_before++] = e;
      const int c = cnt[e];
      cnt[e] = rows_before;  // from here: the expert's first row
      rows_before += c;
    }
    if (tid == 31) offsets[E] = rows_before, active[0] = act_before;
  }
  __syncthreads();
  for (int i = tid; i < n; i += blockDim.x) {
    const int e = ex[i];
    int before = 0;
    for (int j = 0; j < i; ++j) before += ex[j] == e;
    const int row = cnt[e] + before;
    row_token[row] = i / k;
    pos[i] = row;
  }
}

// One CTA (256 threads) per expert: its rows in (token, slot) order.
__global__ void group_place_kernel(const int32_t* expert, int64_t n, int64_t k, const int32_t* offsets,
                                   int32_t* row_token, int32_t* pos) {
  __shared__ int warp_count[8];
  const int e = blockIdx.x;
  if (offsets[e + 1] == offsets[e]) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int run = offsets[e];
  for (int64_t c0 = 0; c0 < n; c0 += 256) {
    const int64_t i = c0 + threadIdx.x;
    const bool match = i < n && expert[i] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, match);
    if (lane == 0) warp_count[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < 8; ++w) {
      before += w < warp ? warp_count[w] : 0;
      total += warp_count[w];
    }
    if (match) {
      const int row = run + before + __popc(ballot & ((1u << lane) - 1u));
      row_token[row] = int32_t(i / k);
      pos[i] = row;
    }
    run += total;
    __syncthreads();
  }
}

constexpr int kTile = 4;  // rows of one expert per pass over its weight rows

template <class W>
__global__ void __launch_bounds__(256) gate_up_kernel(GroupedGluLaunch l) {
  if (int(blockIdx.x) >= l.active[0]) return;
  const int e = l.active[1 + blockIdx.x];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i = int64_t(blockIdx.y) * 8 + warp;
  if (i >= l.I) return;
  const int r0 = l.offsets[e], r1 = l.offsets[e + 1];
  const W* g = static_cast<const W*>(l.ptrs[e]) + i * l.D;
  const W* u = static_cast<const W*>(l.ptrs[l.E + e]) + i * l.D;
  for (int rt = r0; rt < r1; rt += kTile) {
    const int nr = min(kTile, r1 - rt);
    const float* xr[kTile];
#pragma unroll
    for (int r = 0; r < kTile; ++r) xr[r] = l.x + int64_t(l.row_token[rt + min(r, nr - 1)]) * l.x_stride;
    float ag[kTile] = {}, au[kTile] = {};
#pragma unroll 3
    for (int64_t c = lane * 8; c < l.D; c += 256) {
      float wg[8], wu[8];
      load8(g + c, wg);
      load8(u + c, wu);
#pragma unroll
      for (int r = 0; r < kTile; ++r) {
        if (r >= nr) break;
        float xv[8];
        load8(xr[r] + c, xv);
#pragma unroll
        for (int q = 0; q < 8; ++q) ag[r] += wg[q] * xv[q], au[r] += wu[q] * xv[q];
      }
    }
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
      const float sg = warp_sum(ag[r]), su = warp_sum(au[r]);
      if (lane == 0 && r < nr) l.h[int64_t(rt + r) * l.h_stride + i] = sg / (1.0f + expf(-sg)) * su;
    }
  }
}

template <class W>
__global__ void __launch_bounds__(256) down_kernel(GroupedGluLaunch l) {
  if (int(blockIdx.x) >= l.active[0]) return;
  const int e = l.active[1 + blockIdx.x];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t d = int64_t(blockIdx.y) * 8 + warp;
  if (d >= l.D) return;
  const int r0 = l.offsets[e], r1 = l.offsets[e + 1];
  const W* wd = static_cast<const W*>(l.ptrs[2 * l.E + e]) + d * l.I;
  for (int rt = r0; rt < r1; rt += kTile) {
    const int nr = min(kTile, r1 - rt);
    float acc[kTile] = {};
#pragma unroll 4
    for (int64_t c = lane * 8; c < l.I; c += 256) {
      float w[8];
      load8(wd + c, w);
#pragma unroll
      for (int r = 0; r < kTile; ++r) {
        if (r >= nr) break;
        float hv[8];
        load8(l.h + int64_t(rt + r) * l.h_stride + c, hv);
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[r] += w[q] * hv[q];
      }
    }
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
      const float s = warp_sum(acc[r]);
      if (lane == 0 && r < nr) l.y[int64_t(rt + r) * l.y_stride + d] = s;
    }
  }
}

}  // namespace

void launch_moe_route(const float* logits, const float* bias, int64_t T, int64_t E, int k, bool renormalize,
                      float scaling, int32_t* expert, float* weight) {
  require(k <= 64 && E <= 8192, "moe_route (CUDA): k <= 64 and E <= 8192");
  if (launch_moe_route_warp(logits, bias, T, E, k, renormalize, scaling, expert, weight)) return;
  const size_t smem = size_t(E) * 12;
  route_kernel<<<unsigned(T), kRouteThreads, smem>>>(logits, bias, int(E), k, renormalize, scaling, expert,
                                                     weight);
  check_launch("moe route kernel");
}

void launch_moe_group(const int32_t* expert, int64_t n, int64_t k, int64_t E, int32_t* offsets,
                      int32_t* active, int32_t* row_token, int32_t* pos) {
  require(E <= 8192, "moe_group (CUDA): E <= 8192");
  if (n <= kGroupSmallRows) {
    group_small_kernel<<<1, 1024, size_t(E + n) * 4>>>(expert, int(n), int(k), int(E), offsets, active,
                                                       row_token, pos);
    check_launch("moe group kernel");
    return;
  }
  group_count_kernel<<<1, 1024, size_t(E) * 4>>>(expert, n, int(E), offsets, active);
  check_launch("moe group count kernel");
  group_place_kernel<<<unsigned(E), 256>>>(expert, n, k, offsets, row_token, pos);
  check_launch("moe group place kernel");
}

void launch_moe_grouped_glu(const GroupedGluLaunch& l) {
  require(l.x_stride % 4 == 0 && l.h_stride % 4 == 0 && l.I / 8 <= 65535 && l.D / 8 <= 65535,
          "moe_grouped_glu (CUDA): row strides must be multiples of 4");
  const unsigned blocks = unsigned(l.E < l.n_rows ? l.E : l.n_rows);
  const dim3 gu(blocks, unsigned((l.I + 7) / 8)), dn(blocks, unsigned((l.D + 7) / 8));
  if (l.bf16) {
    gate_up_kernel<__nv_bfloat16><<<gu, 256>>>(l);
    check_launch("moe gate/up kernel");
    down_kernel<__nv_bfloat16><<<dn, 256>>>(l);
  } else {
    gate_up_kernel<float><<<gu, 256>>>(l);
    check_launch("moe gate/up kernel");
    down_kernel<float><<<dn, 256>>>(l);
  }
  check_launch("moe down kernel");
}

}  // namespace ds::cuda
