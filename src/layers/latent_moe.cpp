#include "layers/latent_moe.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"

namespace ds {

void GluActivation::apply(const float* gate, const float* up, int64_t n, float* out) const {
  if (act == Activation::Situ) {
    situ_glu({gate, size_t(n)}, {up, size_t(n)}, {out, size_t(n)}, situ);
    return;
  }
  silu_mul(gate, up, n, out);
}

void GluExpert::validate(int64_t in, const char* what) const {
  gate.validate(what);
  up.validate(what);
  down.validate(what);
  DS_CHECK(gate.cols() == in && up.cols() == in && up.rows() == gate.rows() && down.rows() == in &&
               down.cols() == gate.rows(),
           "{}: shapes gate [{}, {}] up [{}, {}] down [{}, {}] do not fit width {}", what, gate.rows(),
           gate.cols(), up.rows(), up.cols(), down.rows(), down.cols(), in);
}

void GluExpert::forward(const float* x, int64_t T, const GluActivation& act, float* y) const {
  if (T == 0) return;
  const int64_t I = gate.rows();
  std::vector<float> g(size_t(T * I)), u(size_t(T * I));  // f32 [T, I]
  gate.forward(x, T, g.data());
  up.forward(x, T, u.data());
  act.apply(g.data(), u.data(), T * I, g.data());
  down.forward(g.data(), T, y);
}

LatentMoeLayer::LatentMoeLayer(const MoeConfig& cfg, GluActivation act, float rms_norm_eps,
                               LatentMoeParams params)
    : cfg_(cfg), act_(act), eps_(rms_norm_eps), p_(std::move(params)) {
  const int64_t E = cfg_.n_expert;
  check_weight(p_.router, "latent moe router");
  DS_CHECK(p_.router.rows == E, "latent moe router has {} rows, expected num_experts {}", p_.router.rows, E);
  DS_CHECK(cfg_.n_expert_per_token >= 1 && cfg_.n_expert_per_token <= E,
           "num_experts_per_token {} not in [1, {}]", cfg_.n_expert_per_token, E);
  DS_CHECK(p_.correction_bias.empty() || int64_t(p_.correction_bias.size()) == E,
           "e_score_correction_bias has {} values, expected {}", p_.correction_bias.size(), E);
  DS_CHECK(int64_t(p_.experts.size()) == E, "latent moe has {} experts, expected {}", p_.experts.size(), E);
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
  for (const GluExpert& e : p_.experts) e.validate(expert_width(), "latent moe expert");
  DS_CHECK(p_.shared.size() <= 1, "latent moe: {} shared MLPs (the shared experts are one fused MLP)",
           p_.shared.size());
  for (const GluExpert& s : p_.shared) s.validate(D, "latent moe shared experts");
}

LatentMoeRouting LatentMoeLayer::route(const float* router_logits, int64_t T) const {
  return route_sigmoid_topk(cfg_, p_.correction_bias, router_logits, T);
}

// u f32 [T, W] = Σ_j w_tj · E_{idx_tj}(z_t), each expert run once over its gathered tokens.
void LatentMoeLayer::routed(const float* z, int64_t T, const LatentMoeRouting& r, float* u) const {
  const int64_t W = expert_width();
  std::vector<std::vector<std::pair<int64_t, float>>> by_expert(p_.experts.size());
  for (int64_t t = 0; t < T; ++t)
    for (int j = 0; j < r.k; ++j)
      by_expert[size_t(r.expert[size_t(t * r.k + j)])].push_back({t, r.weight[size_t(t * r.k + j)]});
  std::fill(u, u + T * W, 0.0f);
  std::vector<float> zg, yg;
  for (size_t e = 0; e < by_expert.size(); ++e) {
    const auto& rows = by_expert[e];
    if (rows.empty()) continue;
    const int64_t n = int64_t(rows.size());
    zg.resize(size_t(n * W));
    yg.resize(size_t(n * W));
    for (int64_t i = 0; i < n; ++i) std::copy_n(z + rows[size_t(i)].first * W, W, zg.data() + i * W);
    p_.experts[e].forward(zg.data(), n, act_, yg.data());
    for (int64_t i = 0; i < n; ++i) {
      float* dst = u + rows[size_t(i)].first * W;
      const float w = rows[size_t(i)].second;
      const float* src = yg.data() + i * W;
      for (int64_t c = 0; c < W; ++c) dst[c] += w * src[c];
    }
  }
}

void LatentMoeLayer::forward(const float* x, int64_t T, float* y) const {
  if (T == 0) return;
  const int64_t D = hidden(), E = cfg_.n_expert, W = expert_width();
  std::vector<float> logits(size_t(T * E));  // f32 [T, E]
  linear(x, T, p_.router, logits.data());
  const LatentMoeRouting r = route(logits.data(), T);
  if (!latent()) {
    routed(x, T, r, y);
  } else {
    std::vector<float> z(size_t(T * W)), u(size_t(T * W));  // f32 [T, L]
    linear(x, T, p_.latent_down, z.data());
    routed(z.data(), T, r, u.data());
    if (!p_.latent_norm.empty()) rmsnorm(u.data(), T, W, p_.latent_norm.data(), eps_, u.data());
    linear(u.data(), T, p_.latent_up, y);
  }
  if (!p_.shared.empty()) {
    std::vector<float> s(size_t(T * D));
    p_.shared[0].forward(x, T, act_, s.data());
    for (int64_t i = 0; i < T * D; ++i) y[i] += s[i];
  }
}

}  // namespace ds
