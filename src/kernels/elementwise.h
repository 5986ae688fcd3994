// Row-wise elementwise operations of the device forward (one interface for every device), over 2-D
// row views [rows, cols] (unit column stride, any row stride) of equal shapes on one device:
// dtype conversion, residual add, the sigmoid output gate and the SiTU-GLU product.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

// y = x converted to y's dtype (F32 <-> BF16 round to nearest even, or a plain copy).
void cast_rows(const TensorView& x, const TensorView& y);

// y += x (f32).
void add_rows(const TensorView& x, const TensorView& y);

// y *= sigmoid(g) (f32): gated MLA output o_proj(attn ⊙ sigmoid(g_proj(x))).
void mul_sigmoid_rows(const TensorView& g, const TensorView& y);

// SiTU-GLU (K3 `hidden_act: situ`), f32: y = [β₁ tanh(a/β₁) · sigmoid(a)] · [β₂ tanh(b/β₂)] with
// a = gate, b = up (β₂ <= 0: the up branch is used as is). y may alias gate or up.
void situ_mul_rows(const TensorView& gate, const TensorView& up, const TensorView& y, float beta,
                   float linear_beta);

// x (F32 or BF16, contiguous) = offset + scale · u with u uniform in [-1, 1), a hash of (seed,
// element index): the same values on every device (random weights for benchmarks, test inputs).
void fill_uniform(const TensorView& x, uint64_t seed, float scale, float offset = 0.0f);

}  // namespace ds
