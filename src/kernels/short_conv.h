// Causal depthwise short convolution with a carried window, followed by SiLU (KDA q/k/v conv,
// one interface for every device). The window layout matches the fixture's conv state: per
// projection [channels, W-1], time innermost, oldest first — the last W-1 pre-conv inputs.
#pragma once

#include <span>

#include "core/tensor_view.h"
#include "kernels/kda.h"

namespace ds {

// x f32 [T, C] pre-conv inputs (row view), taps f32 [C, W] (checkpoint conv1d weight [C, 1, W]),
// state f32 [C, W-1] in/out (zeros for a fresh sequence; updated to the last W-1 inputs),
// y f32 [T, C] (row view) = silu(Σ_j taps[c, j] · x_{t-W+1+j}[c]). T may be 0. y must not alias x.
void short_conv_silu(const TensorView& x, const TensorView& taps, const TensorView& state,
                     const TensorView& y);

// Batched form over a pool of conv windows (the device forward): N sequences packed along T
// (cu_seqlens host [N + 1]). x f32 [T, C] pre-conv rows, taps f32 [C, W], y f32 [T, C] (row views,
// y not aliasing x). Slot s's window f32 [C, W-1] sits at pool + s * slot_stride; sequence n starts
// from the window in slot[n] and leaves its last W-1 inputs there; each checkpoint (sorted by
// sequence, then position) receives the window after `after_tokens` of its sequence's tokens.
struct ShortConvBatchArgs {
  std::span<const int64_t> cu_seqlens;
  TensorView x, taps, y;
  float* pool = nullptr;
  int64_t slot_stride = 0, n_slots = 0;
  std::span<const int32_t> slots;                     // host [N]
  std::span<const KdaCheckpointRequest> checkpoints;  // window copies (seq, slot, after_tokens)
  Device device = Device::Cpu;                        // where x, taps, y and the pool live
};

void short_conv_batch(const ShortConvBatchArgs& a);

}  // namespace ds
