// CPU elementwise activations in f32 (AVX-512): SiLU, sigmoid, softplus (threshold 20, as torch),
// and the SwiGLU product silu(gate) ⊙ up. In-place allowed. Scalar forms: kernels/activation.h.
#pragma once

#include <cstdint>

#include "kernels/activation.h"

namespace ds::cpu {

// y = exp(x), about 1 ulp on [-104, 88.7]; inputs outside are clamped to it (so exp(-inf) = 0,
// exp(+inf) = 3.3e38) and NaN gives 0. Used by the KDA gates and softmax kernels.
void exp_array(const float* x, int64_t n, float* y);
void silu(const float* x, int64_t n, float* y);
void sigmoid(const float* x, int64_t n, float* y);
void softplus(const float* x, int64_t n, float* y);
// y = silu(gate) ⊙ up, all f32 [n]. y may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* y);

}  // namespace ds::cpu
