#pragma once
// One expert's GLU feed-forward on one f32 row, in plain loops: the reference of the grouped and
// token-major MoE kernels. Weights row-major (gate/up [I, D], down [D, I]) as bf16, f32 or MXFP4
// (packed codes u8 [rows, cols/2] + E8M0 scales u8 [rows, cols/32], decoded by core/mxfp4.h).

#include <cstdint>

#include "core/dtype.h"
#include "core/element_read.h"
#include "core/mxfp4.h"
#include "kernels/activation.h"
#include "kernels/moe.h"

namespace ds {

// One expert matrix [rows, cols] read element by element as f32.
struct ExpertMatrix {
  const void* data = nullptr;
  const void* scale = nullptr;  // MXFP4 only
  DType dtype = DType::BF16;    // F32, BF16 or U8 (MXFP4)
  int64_t cols = 0;

  float at(int64_t r, int64_t c) const {
    const int64_t i = r * cols + c;
    if (dtype != DType::U8) return bf16_or_f32_at(data, dtype, i);
    const uint8_t b = static_cast<const uint8_t*>(data)[i / 2];
    const bool low = (i % 2 == 0) == (kMxfp4NibbleOrder == NibbleOrder::LowFirst);
    // cols % 32 == 0, so block i / 32 is block c / 32 of row r.
    return e2m1_to_f32(low ? b & 0x0f : b >> 4) *
           e8m0_to_f32(static_cast<const uint8_t*>(scale)[i / kMxfp4BlockSize]);
  }
};

// Matrix `which` (0 gate, 1 up, 2 down) of expert e.
inline ExpertMatrix expert_matrix(const GroupedExperts& w, int which, int64_t e) {
  const int64_t i = which * w.E + e;
  return {w.ptrs[i], w.mxfp4() ? w.scales[i] : nullptr, w.dtype, which == 2 ? w.I : w.D};
}

// The GLU activation of gate branch g and up branch u, f32.
inline float expert_act(const ExpertAct& a, float g, float u) {
  return a.situ ? situf(g, u, a.beta, a.linear_beta) : siluf(g) * u;
}

// h (f32 [I]) = act(gate x, up x); y (f32 [D]) = down h.
inline void expert_glu_row(const ExpertMatrix& gate, const ExpertMatrix& up, const ExpertMatrix& down,
                           const ExpertAct& act, const float* x, int64_t D, int64_t I, float* h, float* y) {
  for (int64_t i = 0; i < I; ++i) {
    float g = 0.0f, u = 0.0f;
    for (int64_t c = 0; c < D; ++c) {
      g += gate.at(i, c) * x[c];
      u += up.at(i, c) * x[c];
    }
    h[i] = expert_act(act, g, u);
  }
  for (int64_t d = 0; d < D; ++d) {
    float s = 0.0f;
    for (int64_t i = 0; i < I; ++i) s += down.at(d, i) * h[i];
    y[d] = s;
  }
}

}  // namespace ds
