// Normalisations over the last dimension of row-major f32 [rows, dim] tensors: RMSNorm (decoder
// norms, MLA kv_a_layernorm), gated RMSNorm with a sigmoid gate (KDA o_norm) and per-row L2 norm
// (KDA q/k per head). All math in f32; in-place (x == y) is allowed.
#pragma once

#include <cstdint>

namespace ds::cpu {

// y = x · rsqrt(mean(x²) + eps) · weight. weight f32 [dim] or nullptr (= ones).
void rmsnorm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y);

// KDA output norm: y = x · rsqrt(mean(x²) + eps) · weight ⊙ sigmoid(gate).
// x, gate, y f32 [rows, dim]; weight f32 [dim] (shared by every row, e.g. every head).
void rmsnorm_gated_sigmoid(const float* x, const float* gate, int64_t rows, int64_t dim, const float* weight,
                           float eps, float* y);

// In place per row: x = x / sqrt(sum(x²) + eps)  (eps inside the sqrt, no max; FLA l2norm).
void l2norm_rows(float* x, int64_t rows, int64_t dim, float eps);

}  // namespace ds::cpu
