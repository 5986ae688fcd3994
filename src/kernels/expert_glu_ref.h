#pragma once
// One expert's SwiGLU feed-forward on one f32 row, in plain loops: the reference of the grouped and
// token-major MoE kernels. Weights bf16 or f32, row-major: gate/up [I, D], down [D, I].

#include <cstdint>

#include "core/dtype.h"
#include "core/element_read.h"
#include "kernels/activation.h"

namespace ds {

// h (f32 [I]) = silu(gate x) * (up x); y (f32 [D]) = down h.
inline void expert_glu_row(const void* gate, const void* up, const void* down, DType dt, const float* x,
                           int64_t D, int64_t I, float* h, float* y) {
  for (int64_t i = 0; i < I; ++i) {
    float g = 0.0f, u = 0.0f;
    for (int64_t c = 0; c < D; ++c) {
      g += bf16_or_f32_at(gate, dt, i * D + c) * x[c];
      u += bf16_or_f32_at(up, dt, i * D + c) * x[c];
    }
    h[i] = siluf(g) * u;
  }
  for (int64_t d = 0; d < D; ++d) {
    float s = 0.0f;
    for (int64_t i = 0; i < I; ++i) s += bf16_or_f32_at(down, dt, d * I + i) * h[i];
    y[d] = s;
  }
}

}  // namespace ds
