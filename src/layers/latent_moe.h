// LatentMoeLayer: K3's Stable LatentMoE (model-spec §7.4, §7.6). Route on the full-width token
// (f32 sigmoid, selection by score + e_score_correction_bias, weights from the unbiased scores,
// renormalised (+1e-20), × routed_scaling_factor); project to the latent width; run the routed
// experts there (SiTU-GLU or SwiGLU; bf16/f32 or MXFP4 weights, MXFP4 dequantised on the fly);
// weighted sum; RMSNorm; project back up; add the full-width shared experts.
// Without the latent projections it is a plain routed MoE over the hidden width.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/weight_view.h"
#include "layers/expert_linear.h"
#include "layers/moe_router.h"
#include "layers/situ.h"
#include "model/model_config.h"

namespace ds {

// The gated activation of every GLU in the block.
struct GluActivation {
  Activation act = Activation::Silu;
  SituParams situ;  // used when act == Situ
  // out[i] = act(gate[i]) * up[i] (f32); out may alias gate or up.
  void apply(const float* gate, const float* up, int64_t n, float* out) const;
};

// y = down(act(gate·x) ⊙ (up·x)) with ExpertLinear weights (dense or MXFP4).
struct GluExpert {
  ExpertLinear gate;                                  // w1 [I, In]
  ExpertLinear up;                                    // w3 [I, In]
  ExpertLinear down;                                  // w2 [In, I]
  void validate(int64_t in, const char* what) const;  // shapes agree with in; throws naming `what`
  // x f32 [T, In] -> y f32 [T, In] (overwritten).
  void forward(const float* x, int64_t T, const GluActivation& act, float* y) const;
};

struct LatentMoeParams {
  WeightView router;                   // gate.weight [E, D]
  std::vector<float> correction_bias;  // f32 [E] e_score_correction_bias (empty: none)
  WeightView latent_down;              // routed_expert_down_proj [L, D]; data == nullptr: no latent
  std::vector<float> latent_norm;      // f32 [L] routed_expert_norm.weight (empty: no norm)
  WeightView latent_up;                // routed_expert_up_proj [D, L]
  std::vector<GluExpert> experts;      // [E], acting on width L (or D without latent)
  std::vector<GluExpert> shared;       // 0 or 1 fused shared expert at width D
};

using LatentMoeRouting = MoeRouting;  // same sigmoid top-k router (layers/moe_router.h)

class LatentMoeLayer {
 public:
  // cfg: n_expert, top-k, renormalize, routed_scaling, latent_dim, latent_norm; eps: rms_norm_eps.
  LatentMoeLayer(const MoeConfig& cfg, GluActivation act, float rms_norm_eps, LatentMoeParams params);

  // Router from logits f32 [T, E].
  LatentMoeRouting route(const float* router_logits, int64_t T) const;
  // y f32 [T, D] = MoE(x f32 [T, D]) (overwritten).
  void forward(const float* x, int64_t T, float* y) const;

  bool latent() const { return p_.latent_down.data != nullptr; }
  int64_t hidden() const { return p_.router.cols; }
  int64_t expert_width() const { return latent() ? p_.latent_down.rows : hidden(); }

 private:
  void routed(const float* z, int64_t T, const LatentMoeRouting& r, float* u) const;

  MoeConfig cfg_;
  GluActivation act_;
  float eps_;
  LatentMoeParams p_;
};

}  // namespace ds
