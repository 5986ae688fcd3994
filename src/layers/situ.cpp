#include "layers/situ.h"

#include "core/check.h"
#include "kernels/activation.h"

namespace ds {

float situ(float gate, float up, const SituParams& p) {
  return situf(gate, up, p.beta, p.linear_beta);
}

void situ_glu(std::span<const float> gate, std::span<const float> up, std::span<float> out,
              const SituParams& p) {
  DS_CHECK(gate.size() == up.size() && gate.size() == out.size(),
           "situ_glu: gate {} / up {} / out {} lengths differ", gate.size(), up.size(), out.size());
  DS_CHECK(p.beta > 0.0f, "situ_glu: activation_situ_beta must be > 0, got {}", p.beta);
  for (size_t i = 0; i < out.size(); ++i) out[i] = situ(gate[i], up[i], p);
}

void situ_glu_fused(const float* gate_up, int n_tokens, int n, float* out, const SituParams& p) {
  DS_CHECK(n_tokens >= 0 && n >= 0, "situ_glu_fused: bad shape [{}, 2*{}]", n_tokens, n);
  DS_CHECK(p.beta > 0.0f, "situ_glu_fused: activation_situ_beta must be > 0, got {}", p.beta);
  for (int t = 0; t < n_tokens; ++t) {
    const float* row = gate_up + size_t(t) * 2 * n;
    float* o = out + size_t(t) * n;
    for (int i = 0; i < n; ++i) o[i] = situ(row[i], row[n + i], p);
  }
}

}  // namespace ds
