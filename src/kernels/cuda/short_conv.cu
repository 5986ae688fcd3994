// Batched causal short conv + SiLU over a pool of windows (kernels/short_conv.h short_conv_batch):
// one thread per (sequence, channel) keeps the window in registers and walks the sequence's tokens,
// writing the window into checkpoint slots at their positions and back into the sequence's slot at
// the end. f32.
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"

namespace ds::cuda {
namespace {

constexpr int kMaxW = 8;

__global__ void short_conv_kernel(ShortConvLaunch l) {
  const int n = blockIdx.y;
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= l.C) return;
  const int w = int(l.W) - 1;
  float win[kMaxW], tap[kMaxW];
  float* own = l.pool + int64_t(l.slot[n]) * l.slot_stride + ch * w;
  for (int j = 0; j < w; ++j) win[j] = own[j];
  for (int j = 0; j <= w; ++j) tap[j] = l.taps[ch * l.W + j];
  const int64_t r0 = l.cu_seqlens[n], len = l.cu_seqlens[n + 1] - r0;
  int c = l.ck_offset[n];
  const int c_end = l.ck_offset[n + 1];
  for (int64_t t = 0; t < len; ++t) {
    const float x = l.x[(r0 + t) * l.x_stride + ch];
    float acc = tap[w] * x;
    for (int j = 0; j < w; ++j) acc += tap[j] * win[j];
    for (int j = 0; j + 1 < w; ++j) win[j] = win[j + 1];
    win[w - 1] = x;
    l.y[(r0 + t) * l.y_stride + ch] = acc / (1.0f + expf(-acc));
    for (; c < c_end && l.ck_after[c] == t + 1; ++c) {
      float* dst = l.pool + int64_t(l.ck_slot[c]) * l.slot_stride + ch * w;
      for (int j = 0; j < w; ++j) dst[j] = win[j];
    }
  }
  for (int j = 0; j < w; ++j) own[j] = win[j];
}

}  // namespace

void launch_short_conv_batch(const ShortConvLaunch& l) {
  require(l.W >= 2 && l.W <= kMaxW, "short_conv_batch (CUDA): conv kernel size must be in [2, 8]");
  if (l.N == 0 || l.C == 0) return;
  const dim3 grid{unsigned((l.C + 127) / 128), unsigned(l.N)};
  short_conv_kernel<<<grid, 128>>>(l);
  check_launch("short conv kernel");
}

}  // namespace ds::cuda
