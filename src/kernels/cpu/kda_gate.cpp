#include "kernels/cpu/kda_gate.h"

#include <cmath>

#include "core/check.h"
#include "kernels/activation.h"

namespace ds::cpu {

namespace {

// g[t, h*K + j] = op(exp(A_log[h]), f[t, h*K + j] + dt_bias[h*K + j]) over f, g f32 [T, H*K].
template <class Op>
void kda_gate_map(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias, float* g,
                  Op op) {
  const int64_t P = int64_t(H) * K;
  // Prefill rows are independent (a scalar log1p/exp per element): split them over threads.
#pragma omp parallel for schedule(static) if (T * P >= (int64_t(1) << 16))
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const float a = std::exp(a_log[h]);
      for (int j = 0; j < K; ++j) {
        const int64_t c = int64_t(h) * K + j;
        g[t * P + c] = op(a, f[t * P + c] + dt_bias[c]);
      }
    }
}
}  // namespace

void kda_safe_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                   float lower_bound, float* g) {
  kda_gate_map(f, T, H, K, a_log, dt_bias, g,
               [lower_bound](float a, float v) { return lower_bound * sigmoidf(a * v); });
}

void kda_softplus_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                       float* g) {
  kda_gate_map(f, T, H, K, a_log, dt_bias, g, [](float a, float v) { return -a * softplusf(v); });
}

void kda_decay_gate(std::optional<float> lower_bound, const float* f, int64_t T, int H, int K,
                    const float* a_log, const float* dt_bias, float* g) {
  if (lower_bound) {
    DS_CHECK(*lower_bound < 0.0f, "kda: gate_lower_bound must be negative, got {}", *lower_bound);
    kda_safe_gate(f, T, H, K, a_log, dt_bias, *lower_bound, g);
  } else {
    kda_softplus_gate(f, T, H, K, a_log, dt_bias, g);
  }
}

}  // namespace ds::cpu
