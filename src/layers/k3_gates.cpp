#include "layers/k3_gates.h"

#include <cmath>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"

namespace ds {

namespace {
// g[t, h*K + j] = op(exp(A_log[h]), f[t, h*K + j] + dt_bias[h*K + j]) over f, g f32 [T, H*K].
template <class Op>
void kda_gate_map(const float* f, int64_t T, int H, int K, const float* a_log, const float* dt_bias, float* g,
                  Op op) {
  const int64_t P = int64_t(H) * K;
  for (int h = 0; h < H; ++h) {
    const float a = std::exp(a_log[h]);
    for (int64_t t = 0; t < T; ++t) {
      for (int j = 0; j < K; ++j) {
        const int64_t c = int64_t(h) * K + j;
        g[t * P + c] = op(a, f[t * P + c] + dt_bias[c]);
      }
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

// Names of a projection that is either full rank (`full` [out, in]) or low rank (b·a: `a` [r, in],
// `b` [out, r]); `both_set` is the error when the full-rank weight and a/b are all present.
struct RankedProjNames {
  const char* both_set;
  const char* full;
  const char* a;
  const char* b;
};

void check_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b, int64_t out,
                            int64_t in, const RankedProjNames& names) {
  if (full.data != nullptr) {
    DS_CHECK(a.data == nullptr && b.data == nullptr, "{}", names.both_set);
    check_shape(full, out, in, names.full);
    return;
  }
  check_weight(a, names.a);
  check_shape(a, a.rows, in, names.a);
  check_shape(b, out, a.rows, names.b);
}

// y f32 [T, out] = full·x, or b·norm(a·x) with an RMSNorm (weight norm_w f32 [r], eps) between the
// low-rank factors when norm_w != nullptr. x f32 [T, in].
void project_full_or_low_rank(const WeightView& full, const WeightView& a, const WeightView& b,
                              const float* norm_w, float eps, const float* x, int64_t T, float* y) {
  if (full.data != nullptr) {
    linear(x, T, full, y);
    return;
  }
  std::vector<float> low(size_t(T * a.rows));
  linear(x, T, a, low.data());
  if (norm_w != nullptr) rmsnorm(low.data(), T, a.rows, norm_w, eps, low.data());
  linear(low.data(), T, b, y);
}
}  // namespace

void KdaOutputGate::validate(int64_t hidden, int64_t p) const {
  check_full_or_low_rank(
      g_proj, g_a, g_b, p, hidden,
      {"kda output gate: both g_proj and g_a/g_b set", "kda g_proj", "kda g_a_proj", "kda g_b_proj"});
}

void KdaOutputGate::logits(const float* x, int64_t T, float* r) const {
  project_full_or_low_rank(g_proj, g_a, g_b, /*norm_w=*/nullptr, 0.0f, x, T, r);
}

void MlaQueryProj::validate(int64_t hidden, int64_t q_out) const {
  check_full_or_low_rank(q_proj, q_a, q_b, q_out, hidden,
                         {"mla: both q_proj and q_a/q_b set", "mla q_proj", "mla q_a_proj", "mla q_b_proj"});
  if (!lora()) return;
  DS_CHECK(q_a_norm.size() == size_t(q_a.rows), "mla q_a_layernorm.weight: {} values, expected {}",
           q_a_norm.size(), q_a.rows);
}

void MlaQueryProj::forward(const float* x, int64_t T, float* q) const {
  project_full_or_low_rank(q_proj, q_a, q_b, lora() ? q_a_norm.data() : nullptr, eps, x, T, q);
}

void mla_output_gate(const WeightView& g_proj, const float* x, int64_t T, float* attn) {
  check_weight(g_proj, "mla g_proj");
  std::vector<float> g(size_t(T * g_proj.rows));
  linear(x, T, g_proj, g.data());
  for (size_t i = 0; i < g.size(); ++i) attn[i] *= sigmoidf(g[i]);
}

}  // namespace ds
