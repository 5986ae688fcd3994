// MoeLayer: the routed mixture-of-experts feed-forward of Kimi Linear and Kimi K3. Route on the
// full-width token (layers/moe_router.h: f32 sigmoid, selection by score + e_score_correction_bias,
// mixture weights from the unbiased scores, renormalised, × routed_scaling_factor); run each
// selected GLU expert once over its gathered tokens; weighted sum; add the always-on shared experts.
// K3's Stable LatentMoE adds optional latent projections around the routed experts: project the
// token down to the latent width L, run the experts there, RMSNorm the sum, project back up.
// Expert weights are dense or MXFP4 (ExpertLinear, dequantised on the fly).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/weight_view.h"
#include "layers/glu_mlp.h"
#include "layers/moe_router.h"
#include "model/model_config.h"

namespace ds {

struct MoeParams {
  WeightView router;                   // [E, D] gate.weight
  std::vector<float> correction_bias;  // f32 [E] e_score_correction_bias (empty: none)
  WeightView latent_down;              // [L, D] routed_expert_down_proj; data == nullptr: no latent
  std::vector<float> latent_norm;      // f32 [L] routed_expert_norm.weight (empty: no norm)
  WeightView latent_up;                // [D, L] routed_expert_up_proj
  std::vector<GluMlp> experts;         // [E] routed experts, acting on width L (or D without latent)
  std::optional<GluMlp> shared;        // the shared experts as one fused MLP at width D (or none)
};

class MoeLayer {
 public:
  // cfg: n_expert, top-k, renormalize, routed_scaling, latent_dim, latent_norm; eps: rms_norm_eps
  // of the latent RMSNorm.
  MoeLayer(const MoeConfig& cfg, float rms_norm_eps, MoeParams params);

  // Router only (exposed for tests): logits f32 [T, E] -> routing.
  MoeRouting route(const float* router_logits, int64_t T) const;
  // y f32 [T, D] = MoE(x f32 [T, D]) (overwritten).
  void forward(const float* x, int64_t T, float* y) const;

  bool latent() const { return p_.latent_down.data != nullptr; }
  int64_t hidden() const { return p_.router.cols; }
  int64_t expert_width() const { return latent() ? p_.latent_down.rows : hidden(); }

 private:
  // u f32 [T, W] = Σ_j w_tj · E_{idx_tj}(z_t) for z f32 [T, W] (overwritten).
  // all_rows (optional, width W): one more MLP over every token, added unweighted (the shared
  // experts when there is no latent projection), run in the same batch.
  void routed(const float* z, int64_t T, const MoeRouting& r, float* u,
              const GluMlp* all_rows = nullptr) const;

  MoeConfig cfg_;
  float eps_;
  MoeParams p_;
};

}  // namespace ds
