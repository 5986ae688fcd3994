// Causal depthwise short convolution with a carried window, followed by SiLU (KDA q/k/v conv, as
// fla-org/flash-linear-attention `fla/modules/conv/short_conv.py`). The window layout matches the fixture's
// conv state: per projection [channels, W-1], time innermost, oldest first — the last W-1 pre-conv inputs.
#pragma once

#include <cstdint>

namespace ds::cpu {

// x f32 [T, C] pre-conv inputs (row stride x_stride >= C), taps f32 [C, W] (checkpoint
// conv1d weight [C, 1, W]), state f32 [C, W-1] in/out (zeros for a fresh sequence; updated to the
// last W-1 inputs), y f32 [T, C] (row stride y_stride) = silu(Σ_j taps[c, j] · x_{t-W+1+j}[c]).
// T may be 0 (state unchanged). y must not alias x.
void short_conv_silu(const float* x, int64_t x_stride, int64_t T, int64_t C, const float* taps, int64_t W,
                     float* state, float* y, int64_t y_stride);

// Reference: the same math with an explicit concatenated [state ; x] sequence, single thread.
void short_conv_silu_ref(const float* x, int64_t x_stride, int64_t T, int64_t C, const float* taps, int64_t W,
                         float* state, float* y, int64_t y_stride);

}  // namespace ds::cpu
