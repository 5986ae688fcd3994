// Normalisations over the last dimension of f32 row views [rows, dim] (one interface for every
// device): RMSNorm (decoder norms, MLA kv_a_layernorm), gated RMSNorm with a sigmoid gate (KDA
// o_norm) and the per-row L2 norm (KDA q/k per head). All math in f32; in place (x == y) allowed.
#pragma once

#include "core/tensor_view.h"

namespace ds {

// y = x · rsqrt(mean(x²) + eps) · weight. weight f32 [dim], or a view with null data (= ones).
void rmsnorm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y);

// The residual add and the next norm in one pass: x += r, then y = rmsnorm(x) · weight (y must
// not overlap x or r). Same result as add_rows(r, x) followed by rmsnorm(x, weight, eps, y).
void add_rmsnorm(const TensorView& r, const TensorView& x, const TensorView& weight, float eps,
                 const TensorView& y);

// KDA output norm: y = x · rsqrt(mean(x²) + eps) · weight ⊙ sigmoid(gate).
// x, gate, y f32 [rows, dim]; weight f32 [dim] shared by every row (e.g. every head).
void rmsnorm_gated_sigmoid(const TensorView& x, const TensorView& gate, const TensorView& weight, float eps,
                           const TensorView& y);

// In place per row: x = x / sqrt(sum(x²) + eps) (eps inside the sqrt, no max; fla l2norm).
void l2norm_rows(const TensorView& x, float eps);

}  // namespace ds
