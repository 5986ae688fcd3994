#include "layers/k3_gates.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"

namespace ds {

void kda_safe_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                   float lower_bound, float* g) {
  const int64_t P = int64_t(H) * K;
  for (int h = 0; h < H; ++h) {
    const float a = std::exp(a_log[h]);
    for (int64_t t = 0; t < T; ++t) {
      for (int j = 0; j < K; ++j) {
        const int64_t c = int64_t(h) * K + j;
        g[t * P + c] = lower_bound * sigmoidf(a * (f[t * P + c] + dt_bias[c]));
      }
    }
  }
}

void kda_softplus_gate(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias,
                       float* g) {
  const int64_t P = int64_t(H) * K;
  for (int h = 0; h < H; ++h) {
    const float a = std::exp(a_log[h]);
    for (int64_t t = 0; t < T; ++t) {
      for (int j = 0; j < K; ++j) {
        const int64_t c = int64_t(h) * K + j;
        g[t * P + c] = -a * softplusf(f[t * P + c] + dt_bias[c]);
      }
    }
  }
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

std::vector<float> a_log_heads(std::span<const float> stored, int n_heads, const char* what) {
  DS_CHECK(n_heads > 0 && stored.size() >= size_t(n_heads), "{}: A_log has {} values for {} heads", what,
           stored.size(), n_heads);
  return std::vector<float>(stored.begin(), stored.begin() + n_heads);
}

namespace {
void check_shape(const WeightView& w, int64_t rows, int64_t cols, const char* what) {
  check_weight(w, what);
  DS_CHECK(w.rows == rows && w.cols == cols, "weight {}: shape [{}, {}], expected [{}, {}]", what, w.rows,
           w.cols, rows, cols);
}
}  // namespace

void KdaOutputGate::validate(int64_t hidden, int64_t p) const {
  if (full_rank()) {
    DS_CHECK(g_a.data == nullptr && g_b.data == nullptr, "kda output gate: both g_proj and g_a/g_b set");
    check_shape(g_proj, p, hidden, "kda g_proj");
    return;
  }
  check_weight(g_a, "kda g_a_proj");
  check_shape(g_a, g_a.rows, hidden, "kda g_a_proj");
  check_shape(g_b, p, g_a.rows, "kda g_b_proj");
}

void KdaOutputGate::logits(const float* x, int64_t T, float* r) const {
  if (full_rank()) {
    linear(x, T, g_proj, r);
    return;
  }
  std::vector<float> low(size_t(T * g_a.rows));
  linear(x, T, g_a, low.data());
  linear(low.data(), T, g_b, r);
}

void MlaQueryProj::validate(int64_t hidden, int64_t q_out) const {
  if (!lora()) {
    DS_CHECK(q_a.data == nullptr && q_b.data == nullptr, "mla: both q_proj and q_a/q_b set");
    check_shape(q_proj, q_out, hidden, "mla q_proj");
    return;
  }
  check_weight(q_a, "mla q_a_proj");
  check_shape(q_a, q_a.rows, hidden, "mla q_a_proj");
  check_shape(q_b, q_out, q_a.rows, "mla q_b_proj");
  DS_CHECK(q_a_norm.size() == size_t(q_a.rows), "mla q_a_layernorm.weight: {} values, expected {}",
           q_a_norm.size(), q_a.rows);
}

void MlaQueryProj::forward(const float* x, int64_t T, float* q) const {
  if (!lora()) {
    linear(x, T, q_proj, q);
    return;
  }
  std::vector<float> low(size_t(T * q_a.rows));
  linear(x, T, q_a, low.data());
  rmsnorm(low.data(), T, q_a.rows, q_a_norm.data(), eps, low.data());
  linear(low.data(), T, q_b, q);
}

void mla_output_gate(const WeightView& g_proj, const float* x, int64_t T, float* attn) {
  check_weight(g_proj, "mla g_proj");
  std::vector<float> g(size_t(T * g_proj.rows));
  linear(x, T, g_proj, g.data());
  for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoidf(g[i]);
}

}  // namespace ds
