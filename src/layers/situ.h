// SiTU-GLU activation of Kimi K3 (`hidden_act: situ`; K3's HF `SituAndMul`): for a gate branch a and an
// up branch b, out = [β₁·tanh(a/β₁)·sigmoid(a)] · [β₂·tanh(b/β₂)], always computed in f32.
// Owns: the formula and its parameters; |out| ≤ β₁·β₂ for any finite input.
#pragma once

#include <span>

namespace ds {

struct SituParams {
  float beta = 4.0f;          // activation_situ_beta: soft clip of the gate branch (> 0)
  float linear_beta = 25.0f;  // activation_situ_linear_beta: soft clip of the up branch; <= 0: up unclipped
};

// One element: gate a, up b.
float situ(float gate, float up, const SituParams& p);

// out[i] = situ(gate[i], up[i]); all three of equal length. `out` may alias `gate` or `up`.
void situ_glu(std::span<const float> gate, std::span<const float> up, std::span<float> out,
              const SituParams& p);

// The fused layout of the HF module: rows of [gate (n) ; up (n)], gate_up f32 [T, 2n] -> out f32 [T, n].
void situ_glu_fused(const float* gate_up, int n_tokens, int n, float* out, const SituParams& p);

}  // namespace ds
