#include "layers/moe_layer.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "kernels/linear.h"
#include "kernels/norm.h"

namespace ds {

MoeLayer::MoeLayer(const MoeConfig& cfg, float rms_norm_eps, MoeParams params)
    : cfg_(cfg), eps_(rms_norm_eps), p_(std::move(params)) {
  const int64_t E = cfg_.n_expert;
  check_weight(p_.router, "moe router");
  DS_CHECK(p_.router.rows == E, "moe router has {} rows, expected num_experts {}", p_.router.rows, E);
  DS_CHECK(int64_t(p_.experts.size()) == E, "moe has {} experts, expected {}", p_.experts.size(), E);
  DS_CHECK(p_.correction_bias.empty() || int64_t(p_.correction_bias.size()) == E,
           "e_score_correction_bias has {} values, expected {}", p_.correction_bias.size(), E);
  DS_CHECK(cfg_.n_expert_per_token >= 1 && cfg_.n_expert_per_token <= E,
           "num_experts_per_token {} not in [1, {}]", cfg_.n_expert_per_token, E);
  const int64_t D = hidden();
  if (latent()) {
    check_weight(p_.latent_down, "routed_expert_down_proj");
    check_weight(p_.latent_up, "routed_expert_up_proj");
    const int64_t L = p_.latent_down.rows;
    DS_CHECK(p_.latent_down.cols == D && p_.latent_up.rows == D && p_.latent_up.cols == L,
             "latent moe: routed_expert_down_proj [{}, {}] / up_proj [{}, {}] do not fit hidden {}",
             p_.latent_down.rows, p_.latent_down.cols, p_.latent_up.rows, p_.latent_up.cols, D);
    DS_CHECK(cfg_.latent_dim == 0 || cfg_.latent_dim == L,
             "latent moe: routed_expert_hidden_size {} but routed_expert_down_proj has {} rows",
             cfg_.latent_dim, L);
    DS_CHECK(p_.latent_norm.empty() || int64_t(p_.latent_norm.size()) == L,
             "routed_expert_norm.weight has {} values, expected {}", p_.latent_norm.size(), L);
    DS_CHECK(!cfg_.latent_norm || !p_.latent_norm.empty(),
             "latent_moe_use_norm is set but routed_expert_norm.weight is missing");
  }
  for (const GluMlp& e : p_.experts) {
    e.validate("moe expert");
    DS_CHECK(e.width() == expert_width(), "moe expert has width {}, expected {}", e.width(), expert_width());
  }
  if (p_.shared) {
    p_.shared->validate("moe shared experts");
    DS_CHECK(p_.shared->width() == D, "moe shared experts have width {}, expected hidden {}",
             p_.shared->width(), D);
  }
}

MoeRouting MoeLayer::route(const float* router_logits, int64_t T) const {
  return route_sigmoid_topk(cfg_, p_.correction_bias, router_logits, T);
}

void MoeLayer::routed(const float* z, int64_t T, const MoeRouting& r, float* u,
                      const GluMlp* all_rows) const {
  const int64_t W = expert_width();
  // Group (token, weight) by expert, then run every selected expert once over its tokens, all of
  // them (and all_rows over every token) as one batch (GluMlp::forward_grouped).
  std::vector<std::vector<std::pair<int64_t, float>>> by_expert(p_.experts.size());
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < r.k; ++j)
      by_expert[size_t(r.expert[size_t(t * r.k + j)])].push_back({t, r.weight[size_t(t * r.k + j)]});
  std::vector<const GluMlp*> mlps;
  std::vector<int64_t> offsets{0};
  std::vector<std::pair<int64_t, float>> rows;  // (token, weight) of every gathered row
  for (size_t e = 0; e < by_expert.size(); ++e) {
    if (by_expert[e].empty()) continue;
    mlps.push_back(&p_.experts[e]);
    rows.insert(rows.end(), by_expert[e].begin(), by_expert[e].end());
    offsets.push_back(int64_t(rows.size()));
  }
  const int64_t n_routed = int64_t(rows.size());
  if (all_rows) {
    mlps.push_back(all_rows);
    for (int64_t t = 0; t < T; ++t) rows.push_back({t, 1.0f});
    offsets.push_back(int64_t(rows.size()));
  }
  const int64_t n = int64_t(rows.size());
  std::vector<float> zg(size_t(n * W)), yg(size_t(n * W));  // f32 [n, W] gathered inputs / outputs
  for (int64_t i = 0; i < n; ++i) std::copy_n(z + rows[size_t(i)].first * W, W, zg.data() + i * W);
  GluMlp::forward_grouped(mlps, offsets, zg.data(), yg.data());
  std::fill(u, u + T * W, 0.0f);
  for (int64_t i = 0; i < n_routed; ++i) {
    float* dst = u + rows[size_t(i)].first * W;
    const float w = rows[size_t(i)].second;
    const float* src = yg.data() + i * W;
    for (int64_t c = 0; c < W; ++c) dst[c] += w * src[c];
  }
  for (int64_t i = n_routed; i < n; ++i) {  // all_rows: added after the routed sum, unweighted
    float* dst = u + rows[size_t(i)].first * W;
    const float* src = yg.data() + i * W;
    for (int64_t c = 0; c < W; ++c) dst[c] += src[c];
  }
}

void MoeLayer::forward(const float* x, int64_t T, float* y) const {
  if (T == 0) return;
  const int64_t E = cfg_.n_expert, W = expert_width();
  std::vector<float> logits(size_t(T * E));  // f32 [T, E]
  linear(f32_rows(x, T, p_.router.cols), p_.router, f32_rows(logits.data(), T, p_.router.rows));
  const MoeRouting r = route(logits.data(), T);
  if (!latent()) {  // the shared experts join the routed ones' batch
    routed(x, T, r, y, p_.shared ? &*p_.shared : nullptr);
    return;
  }
  std::vector<float> z(size_t(T * W)), u(size_t(T * W));  // f32 [T, L]
  linear(f32_rows(x, T, p_.latent_down.cols), p_.latent_down, f32_rows(z.data(), T, p_.latent_down.rows));
  routed(z.data(), T, r, u.data());
  if (!p_.latent_norm.empty())
    rmsnorm(f32_rows(u.data(), T, W), f32_vec(p_.latent_norm.data(), W), eps_, f32_rows(u.data(), T, W));
  linear(f32_rows(u.data(), T, p_.latent_up.cols), p_.latent_up, f32_rows(y, T, p_.latent_up.rows));
  if (p_.shared) p_.shared->forward(x, T, y, /*accumulate=*/true);
}

}  // namespace ds
