// KDA gates: the decay gate in its two forms (Kimi Linear's softplus gate and Kimi K3's bounded
// "safe" gate lb·sigmoid(exp(A_log)·(f + dt_bias))), A_log narrowing, and the output-gate logits
// (full-rank g_proj of K3 or low-rank g_a/g_b of Kimi Linear). Sources: the Kimi Linear HF
// `modeling_kimi.py` and fla-org/flash-linear-attention `fla/ops/kda/gate.py`; K3's HF
// `modeling_kimi_linear.py`. All math f32; weights are non-owning checkpoint views.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/weight_view.h"

namespace ds {

// Safe gate: g[t, h*K + j] = lower_bound · sigmoid(exp(a_log[h]) · (f[t, h*K + j] + dt_bias[h*K + j])).
// f, g f32 [T, H*K] (may alias); a_log f32 [H]; dt_bias f32 [H*K]. g ∈ (lower_bound, 0).
void kda_safe_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                   float lower_bound, float* g);

// Kimi Linear gate: g = −exp(a_log[h]) · softplus(f + dt_bias) (threshold 20). Same layouts.
void kda_softplus_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                       float* g);

// Dispatch on the config key gate_lower_bound: present -> safe gate, absent -> softplus gate.
void kda_decay_gate(std::optional<float> lower_bound, const float* f, int64_t T, int H, int K,
                    const float* a_log, const float* dt_bias, float* g);

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
