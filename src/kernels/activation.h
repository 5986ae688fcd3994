// Elementwise activations (one interface for every device): SiLU, sigmoid, softplus (threshold 20,
// as torch) and the SwiGLU product silu(gate) ⊙ up, over contiguous f32 views of any shape; plus
// the scalar host forms (and SiTU-GLU's) the layers and reference loops use in their own loops. In place (x
// == y) is allowed.
#pragma once

#include <cmath>

#include "core/tensor_view.h"

namespace ds {

inline float sigmoidf(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}
inline float siluf(float x) {
  return x / (1.0f + std::exp(-x));
}
// torch.nn.functional.softplus(x, beta=1, threshold=20): x if x > 20 else log1p(exp(x)).
inline float softplusf(float x) {
  return x > 20.0f ? x : std::log1p(std::exp(x));
}
// K3's SiTU-GLU on one (gate, up) pair: [β₁ tanh(gate/β₁) sigmoid(gate)] · [β₂ tanh(up/β₂)]
// (linear_beta = β₂ <= 0: up unclipped).
inline float situf(float gate, float up, float beta, float linear_beta) {
  const float g = beta * std::tanh(gate / beta) * sigmoidf(gate);
  return g * (linear_beta > 0.0f ? linear_beta * std::tanh(up / linear_beta) : up);
}

// y = f(x) elementwise; x, y contiguous f32 views with the same number of elements, one device.
void silu(const TensorView& x, const TensorView& y);
void sigmoid(const TensorView& x, const TensorView& y);
void softplus(const TensorView& x, const TensorView& y);
// y = silu(gate) ⊙ up; y may alias gate or up.
void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y);

}  // namespace ds
