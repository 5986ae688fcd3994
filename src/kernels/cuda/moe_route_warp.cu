// The sigmoid top-k router with one warp per token (E <= 32 * kPer experts, up to 1024): lane l keeps
// the scores of experts l, l + 32, ... in registers, and each of the k rounds is a local arg-max over
// them and a warp arg-max by two warp reductions (redux.sync: the largest order-preserving key of the
// selection value, then the lowest expert id holding it — ties: the lower id), with no shared memory and
// no barrier. A programmatic dependent launch: the bias (a weight) is loaded before the wait for the
// router logits. Same results as route_kernel (moe.cu), the block-wide version kept for wider expert
// counts, and as the CPU moe_route (kernels/moe.cpp).
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/moe_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace ds::cuda {
namespace {

constexpr int kWarpsPerCta = 4;

// An unsigned key with the order of the float (+0 for -0: equal values, equal keys).
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t b = __float_as_uint(v == 0.0f ? 0.0f : v);
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}

template <int kPer>
__global__ void __launch_bounds__(32 * kWarpsPerCta)
    route_warp_kernel(const float* logits, const float* bias, int64_t T, int E, int k, bool renormalize,
                      float scaling, int32_t* expert, float* weight) {
  const int lane = threadIdx.x % 32;
  const int64_t t = int64_t(blockIdx.x) * kWarpsPerCta + threadIdx.x / 32;
  float b[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) b[j] = bias != nullptr && lane + 32 * j < E ? bias[lane + 32 * j] : 0.0f;
  pdl_wait();
  pdl_trigger();
  if (t >= T) return;
  float sc[kPer], sel[kPer];
  uint32_t taken = 0;  // bit j: expert lane + 32 j chosen (or past E)
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int e = lane + 32 * j;
    sc[j] = e < E ? 1.0f / (1.0f + expf(-logits[t * E + e])) : 0.0f;
    sel[j] = sc[j] + b[j];
    if (e >= E) taken |= 1u << j;
  }
  int my_e = 0;
  float my_s = 0.0f, sum = 0.0f;
  for (int r = 0; r < k; ++r) {
    float bv = -FLT_MAX;
    int bi = E;  // none
#pragma unroll
    for (int j = 0; j < kPer; ++j)  // ascending ids: a strict > keeps the lower id of equal values
      if (!(taken >> j & 1u) && (bi == E || sel[j] > bv)) bv = sel[j], bi = lane + 32 * j;
    // Key 0 (below every value's) for a lane with none left; then the lowest id of the largest key.
    const uint32_t key = bi == E ? 0u : order_key(bv);
    const uint32_t best = __reduce_max_sync(0xffffffffu, key);
    const uint32_t win = __reduce_min_sync(0xffffffffu, key == best && bi != E ? uint32_t(bi) : 0xffffffffu);
    bi = win == 0xffffffffu ? E : int(win);
    float s = 0.0f;
    if (lane == bi % 32) {
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j == bi / 32) s = sc[j], taken |= 1u << j;
    }
    s = __shfl_sync(0xffffffffu, s, bi % 32);
    sum += s;
    if (lane == r) my_e = bi, my_s = s;
  }
  const float norm = renormalize && k > 1 ? 1.0f / (sum + 1e-20f) : 1.0f;
  if (lane < k) expert[t * k + lane] = my_e, weight[t * k + lane] = my_s * norm * scaling;
}

}  // namespace

bool launch_moe_route_warp(const float* logits, const float* bias, int64_t T, int64_t E, int k,
                           bool renormalize, float scaling, int32_t* expert, float* weight) {
  if (k > 32 || E > 1024) return false;
  const dim3 grid(unsigned((T + kWarpsPerCta - 1) / kWarpsPerCta)), block(32 * kWarpsPerCta);
  auto launch = [&](auto kernel) {
    launch_pdl(kernel, grid, block, 0, logits, bias, T, int(E), k, renormalize, scaling, expert, weight);
  };
  if (E <= 256)
    launch(route_warp_kernel<8>);
  else if (E <= 512)
    launch(route_warp_kernel<16>);
  else
    launch(route_warp_kernel<32>);
  return true;
}

}  // namespace ds::cuda
