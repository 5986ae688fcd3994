#include "layers/moe_layer.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"

namespace ds {

MoeLayer::MoeLayer(const MoeConfig& cfg, MoeParams params) : cfg_(cfg), p_(std::move(params)) {
  const int64_t E = cfg_.n_expert;
  check_weight(p_.router, "moe router");
  DS_CHECK(p_.router.rows == E, "moe router has {} rows, expected num_experts {}", p_.router.rows, E);
  DS_CHECK(int64_t(p_.experts.size()) == E, "moe has {} experts, expected {}", p_.experts.size(), E);
  DS_CHECK(p_.correction_bias.empty() || int64_t(p_.correction_bias.size()) == E,
           "e_score_correction_bias has {} values, expected {}", p_.correction_bias.size(), E);
  DS_CHECK(cfg_.n_expert_per_token >= 1 && cfg_.n_expert_per_token <= E,
           "num_experts_per_token {} not in [1, {}]", cfg_.n_expert_per_token, E);
  for (const GluMlp& e : p_.experts) e.validate("moe expert");
  if (p_.shared.gate.rows > 0) p_.shared.validate("moe shared expert");
}

MoeRouting MoeLayer::route(const float* router_logits, int64_t T) const {
  return route_sigmoid_topk(cfg_, p_.correction_bias, router_logits, T);
}

void MoeLayer::forward(const float* x, int64_t T, float* y) const {
  const int64_t D = p_.router.cols, E = cfg_.n_expert;
  std::vector<float> logits(size_t(T * E));  // f32 [T, E]
  linear(x, T, p_.router, logits.data());
  const MoeRouting r = route(logits.data(), T);

  // Group (token, weight) by expert, then run each expert once over its tokens.
  std::vector<std::vector<std::pair<int64_t, float>>> by_expert(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < r.k; ++j)
      by_expert[size_t(r.expert[size_t(t * r.k + j)])].push_back({t, r.weight[size_t(t * r.k + j)]});

  std::fill(y, y + T * D, 0.0f);
  std::vector<float> xg, yg;
  for (int64_t e = 0; e < E; ++e) {
    const auto& rows = by_expert[size_t(e)];
    if (rows.empty()) continue;
    const int64_t n = int64_t(rows.size());
    xg.resize(size_t(n * D));
    yg.resize(size_t(n * D));
    for (int64_t i = 0; i < n; ++i) std::copy_n(x + rows[size_t(i)].first * D, D, xg.data() + i * D);
    p_.experts[size_t(e)].forward(xg.data(), n, yg.data());
    for (int64_t i = 0; i < n; ++i) {
      float* dst = y + rows[size_t(i)].first * D;
      const float w = rows[size_t(i)].second;
      const float* src = yg.data() + i * D;
      for (int64_t d = 0; d < D; ++d) dst[d] += w * src[d];
    }
  }
  if (p_.shared.gate.rows > 0) p_.shared.forward(x, T, y, /*accumulate=*/true);
}

}  // namespace ds
