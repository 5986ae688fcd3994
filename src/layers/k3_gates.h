// Kimi K3 gate pieces that B2's KDA and MLA layers call (model-spec §3.2, §3.4, §5.2): the bounded
// ("safe") KDA decay gate lb·sigmoid(exp(A_log)·(f + dt_bias)) next to Kimi Linear's softplus gate,
// the KDA output-gate logits (full-rank g_proj or low-rank g_a/g_b), the q-LoRA MLA query path and
// the sigmoid output gate of gated MLA. All math f32; weights are non-owning checkpoint views.
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

// A_log as stored -> the first n_heads values (K3 stores 128 per layer for 96 heads, model-spec §8).
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

// MLA query q f32 [T, H*(nope+rope)]: q_lora_rank > 0 -> q_b·RMSNorm_eps(q_a·x) with q_a_layernorm
// (eps 1e-6 as the HF file), else q_proj·x.
struct MlaQueryProj {
  WeightView q_proj;            // [H*Dq, D] when there is no q-LoRA (data == nullptr otherwise)
  WeightView q_a;               // [R, D]
  std::vector<float> q_a_norm;  // f32 [R] q_a_layernorm.weight
  WeightView q_b;               // [H*Dq, R]
  float eps = 1e-6f;
  bool lora() const { return q_proj.data == nullptr; }
  int64_t out_features() const { return lora() ? q_b.rows : q_proj.rows; }
  void validate(int64_t hidden, int64_t q_out) const;
  void forward(const float* x, int64_t T, float* q) const;  // x f32 [T, D]
};

// Gated MLA output gate, in place before o_proj: attn[t, i] *= sigmoid((g_proj·x)[t, i]).
// attn f32 [T, H*V]; x f32 [T, D] (the layer input after input_layernorm); g_proj [H*V, D].
void mla_output_gate(const WeightView& g_proj, const float* x, int64_t T, float* attn);

}  // namespace ds
