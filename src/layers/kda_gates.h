// KDA gates: A_log narrowing and the output-gate logits (full-rank g_proj of K3 or low-rank g_a/g_b
// of Kimi Linear). The decay gate in its two forms (Kimi Linear's softplus gate and Kimi K3's
// bounded "safe" gate lb·sigmoid(exp(A_log)·(f + dt_bias))) is a kernel: kernels/kda.h. Sources: the Kimi
// Linear HF `modeling_kimi.py` and fla-org/flash-linear-attention `fla/ops/kda/gate.py`; K3's HF
// `modeling_kimi_linear.py`. All math f32; weights are non-owning checkpoint views.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/weight_view.h"

namespace ds {

// A_log as stored -> the first n_heads values (K3 stores 128 per layer for 96 heads).
// Throws ds::Error naming `what` if fewer than n_heads values are stored.
std::vector<float> a_log_heads(std::span<const float> stored, int n_heads, const char* what);

// KDA output gate logits r f32 [T, P]: full rank r = g_proj·x (use_full_rank_gate), else
// r = g_b·(g_a·x). Exactly one form must be set.
struct KdaOutputGate {
  WeightView g_proj;  // [P, D] full rank, or data == nullptr
  WeightView g_a;     // [r, D] low rank (Kimi Linear)
  WeightView g_b;     // [P, r]
  bool full_rank() const { return g_proj.data != nullptr; }
  int64_t out_features() const { return full_rank() ? g_proj.rows : g_b.rows; }
  void validate(int64_t hidden, int64_t p) const;          // throws naming the tensor and its shape
  void logits(const float* x, int64_t T, float* r) const;  // x f32 [T, D]
};

}  // namespace ds
