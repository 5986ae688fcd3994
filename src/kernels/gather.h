// Row gathers of the device forward (one interface for every device): token embeddings, the MoE
// token permutation into expert-grouped rows, and the weighted combine back to tokens.
#pragma once

#include "core/tensor_view.h"
#include "core/weight_view.h"

namespace ds {

// out f32 [T, D] (row view) = rows ids[t] of table [V, D] (F32 or BF16, on out's device);
// ids I32 [T] contiguous on the same device, each in [0, V) (checked on the CPU only).
void embedding_rows(const WeightView& table, const TensorView& ids, const TensorView& out);

// dst f32 [n, C] row i = src f32 [m, C] row idx[i]; idx I32 [n] contiguous, entries in [0, m).
void gather_rows(const TensorView& src, const TensorView& idx, const TensorView& dst);

// MoE combine: out f32 [T, C] row t = Σ_j weight[t, j] · rows[pos[t, j]] for j = 0..k-1 in order
// (deterministic); rows f32 [n, C]; pos I32 [T, k], weight f32 [T, k] contiguous.
void weighted_combine_rows(const TensorView& rows, const TensorView& pos, const TensorView& weight,
                           const TensorView& out);

}  // namespace ds
