// Batched causal short conv + SiLU over a pool of windows (kernels/short_conv.h short_conv_batch).
// The conv is a FIR filter, so outputs are independent: one thread per (channel, run of rows) slides
// the window over its run (inputs before a sequence's first row come from its slot window), then a
// second kernel writes the windows after the checkpoint positions into their slots and the window
// after the last token back into the sequence's slot. f32.
#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/model_ops_launch.h"

namespace ds::cuda {
namespace {

constexpr int kMaxW = 8;

// The sequence of packed row r: the last n with cu[n] <= r.
__device__ __forceinline__ int seq_of(const int64_t* cu, int N, int64_t r) {
  int lo = 0, hi = N - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (cu[mid] <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Input s of sequence n's channel ch, s in [-(W - 1), len): the step's rows, or the slot window before them.
template <int W>
__device__ __forceinline__ float input_at(const ShortConvLaunch& l, int n, int64_t r0, int64_t ch,
                                          int64_t s) {
  if (s >= 0) return l.x[(r0 + s) * l.x_stride + ch];
  return l.pool[int64_t(l.slot[n]) * l.slot_stride + ch * (W - 1) + (W - 1) + s];
}

// Thread per (channel, run of kRowsPerThread consecutive rows): the window slides in registers (each
// input read once per run), reloaded where a sequence starts inside the run.
constexpr int kRowsPerThread = 16;
template <int W>
__global__ void __launch_bounds__(256) conv_kernel(ShortConvLaunch l, int64_t T) {
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= l.C) return;
  float tap[W], win[W - 1];
#pragma unroll
  for (int j = 0; j < W; ++j) tap[j] = l.taps[ch * W + j];
  for (int64_t r_begin = int64_t(blockIdx.y) * kRowsPerThread; r_begin < T;
       r_begin += int64_t(gridDim.y) * kRowsPerThread) {
    const int64_t r_end = r_begin + kRowsPerThread < T ? r_begin + kRowsPerThread : T;
    int n = seq_of(l.cu_seqlens, l.N, r_begin);
    int64_t r0 = l.cu_seqlens[n], next = l.cu_seqlens[n + 1];
#pragma unroll
    for (int j = 0; j < W - 1; ++j) win[j] = input_at<W>(l, n, r0, ch, r_begin - r0 - (W - 1) + j);
    for (int64_t r = r_begin; r < r_end; ++r) {
      if (r == next) {  // a new sequence starts here: its window comes from its slot
        n = seq_of(l.cu_seqlens, l.N, r);
        r0 = l.cu_seqlens[n], next = l.cu_seqlens[n + 1];
#pragma unroll
        for (int j = 0; j < W - 1; ++j) win[j] = input_at<W>(l, n, r0, ch, -(W - 1) + j);
      }
      const float x = l.x[r * l.x_stride + ch];
      float acc = tap[W - 1] * x;
#pragma unroll
      for (int j = 0; j < W - 1; ++j) acc += tap[j] * win[j];
#pragma unroll
      for (int j = 0; j + 1 < W - 1; ++j) win[j] = win[j + 1];
      win[W - 2] = x;
      l.y[r * l.y_stride + ch] = acc / (1.0f + expf(-acc));
    }
  }
}

// Thread per (window, channel) for windows [first, first + count): window c < ck_offset[N] is
// checkpoint c; window ck_offset[N] + n is sequence n's own slot after its last token. The checkpoints
// run first (a launch of their own): they may read the own slot's window from before the step.
template <int W>
__global__ void __launch_bounds__(256) window_kernel(ShortConvLaunch l, int first, int count) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(count) * l.C) return;
  const int c = first + int(i / l.C);
  const int64_t ch = i % l.C;
  const int n_ck = l.ck_offset[l.N];
  int n;
  int64_t upto;
  float* dst;
  if (c < n_ck) {
    n = 0;
    while (l.ck_offset[n + 1] <= c) ++n;
    upto = l.ck_after[c];
    dst = l.pool + int64_t(l.ck_slot[c]) * l.slot_stride + ch * (W - 1);
  } else {
    n = c - n_ck;
    upto = l.cu_seqlens[n + 1] - l.cu_seqlens[n];
    dst = l.pool + int64_t(l.slot[n]) * l.slot_stride + ch * (W - 1);
  }
  const int64_t r0 = l.cu_seqlens[n];
  float win[W - 1];
#pragma unroll
  for (int j = 0; j < W - 1; ++j) win[j] = input_at<W>(l, n, r0, ch, upto - (W - 1) + j);
    // The own slot may also be the source (a step shorter than the window): this thread reads its
    // channel's window before writing it, and no other thread of this launch reads it.
#pragma unroll
  for (int j = 0; j < W - 1; ++j) dst[j] = win[j];
}

template <int W>
void launch_w(const ShortConvLaunch& l) {
  if (l.T > 0) {
    const int64_t runs = (l.T + kRowsPerThread - 1) / kRowsPerThread;
    const dim3 grid(unsigned((l.C + 255) / 256), unsigned(runs < 16384 ? runs : 16384));
    conv_kernel<W><<<grid, 256>>>(l, l.T);
  }
  check_launch("short conv kernel");
  for (const auto [first, count] : {std::pair<int, int>{0, l.n_checkpoints}, {l.n_checkpoints, l.N}}) {
    const int64_t m = int64_t(count) * l.C;
    if (m > 0) window_kernel<W><<<unsigned((m + 255) / 256), 256>>>(l, first, count);
    check_launch("short conv window kernel");
  }
}

}  // namespace

void launch_short_conv_batch(const ShortConvLaunch& l) {
  require(l.W >= 2 && l.W <= kMaxW, "short_conv_batch (CUDA): conv kernel size must be in [2, 8]");
  if (l.N == 0 || l.C == 0) return;
  require(l.T >= 0 && l.n_checkpoints >= 0, "short_conv_batch (CUDA): bad sizes");
  switch (l.W) {
    case 2:
      return launch_w<2>(l);
    case 3:
      return launch_w<3>(l);
    case 4:
      return launch_w<4>(l);
    case 5:
      return launch_w<5>(l);
    case 6:
      return launch_w<6>(l);
    case 7:
      return launch_w<7>(l);
    default:
      return launch_w<8>(l);
  }
}

}  // namespace ds::cuda
