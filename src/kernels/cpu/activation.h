// Elementwise activations in f32: SiLU, sigmoid, softplus (threshold 20, as torch), and the
// SwiGLU product silu(gate) ⊙ up. Scalar inline forms plus array forms; in-place allowed.
#pragma once

#include <cmath>
#include <cstdint>

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

// y = exp(x), about 1 ulp on [-104, 88.7]; inputs outside are clamped to it (so exp(-inf) = 0,
// exp(+inf) = 3.3e38) and NaN gives 0. Used by the KDA gates and softmax kernels.
void exp_array(const float* x, int64_t n, float* y);
void silu(const float* x, int64_t n, float* y);
void sigmoid(const float* x, int64_t n, float* y);
void softplus(const float* x, int64_t n, float* y);
// y = silu(gate) ⊙ up, all f32 [n]. y may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* y);

}  // namespace ds
