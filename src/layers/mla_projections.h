// MLA projections of Kimi K3's gated MLA: the query path (direct q_proj, or q-LoRA
// q_b·RMSNorm(q_a·x)) and the sigmoid output gate applied before o_proj (K3's HF
// `modeling_kimi_linear.py`). All math f32; weights are non-owning checkpoint views.
#pragma once

#include <cstdint>
#include <vector>

#include "core/weight_view.h"

namespace ds {

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
