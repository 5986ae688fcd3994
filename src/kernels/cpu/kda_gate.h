// CPU KDA decay gates over f, g f32 [T, H*K] (may alias); a_log f32 [H]; dt_bias f32 [H*K].
#pragma once

#include <cstdint>
#include <optional>

namespace ds::cpu {

// Safe gate (K3): g = lower_bound · sigmoid(exp(a_log[h]) · (f + dt_bias)), g ∈ (lower_bound, 0).
void kda_safe_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                   float lower_bound, float* g);

// Kimi Linear gate: g = −exp(a_log[h]) · softplus(f + dt_bias) (threshold 20).
void kda_softplus_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                       float* g);

// lower_bound present -> safe gate (throws ds::Error unless negative), absent -> softplus gate.
void kda_decay_gate(std::optional<float> lower_bound, const float* f, int64_t T, int H, int K,
                    const float* a_log, const float* dt_bias, float* g);

}  // namespace ds::cpu
