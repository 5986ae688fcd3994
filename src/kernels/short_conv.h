// Causal depthwise short convolution with a carried window, followed by SiLU (KDA q/k/v conv,
// one interface for every device). The window layout matches the fixture's conv state: per
// projection [channels, W-1], time innermost, oldest first — the last W-1 pre-conv inputs.
#pragma once

#include "core/tensor_view.h"

namespace ds {

// x f32 [T, C] pre-conv inputs (row view), taps f32 [C, W] (checkpoint conv1d weight [C, 1, W]),
// state f32 [C, W-1] in/out (zeros for a fresh sequence; updated to the last W-1 inputs),
// y f32 [T, C] (row view) = silu(Σ_j taps[c, j] · x_{t-W+1+j}[c]). T may be 0. y must not alias x.
void short_conv_silu(const TensorView& x, const TensorView& taps, const TensorView& state,
                     const TensorView& y);

}  // namespace ds
