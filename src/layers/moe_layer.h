// MoeLayer: sparse feed-forward of Kimi Linear (model-spec §6): f32 sigmoid router, selection by
// score + e_score_correction_bias, mixture weights gathered from the UNBIASED scores, renormalised
// and scaled by routed_scaling_factor; SwiGLU routed experts plus always-on shared experts.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/glu_mlp.h"
#include "layers/moe_router.h"
#include "model/model_config.h"

namespace ds {

struct MoeParams {
  WeightView router;                   // [E, D] gate.weight
  std::vector<float> correction_bias;  // f32 [E] e_score_correction_bias (empty = none)
  std::vector<GluMlp> experts;         // [E] w1 = gate, w3 = up, w2 = down
  GluMlp shared;                       // shared_experts (gate.rows == 0: none)
};

class MoeLayer {
 public:
  MoeLayer(const MoeConfig& cfg, MoeParams params);

  // Router only (exposed for tests): logits f32 [T, E] -> routing.
  MoeRouting route(const float* router_logits, int64_t T) const;

  // y f32 [T, D] = MoE(x f32 [T, D]) (overwrites y).
  void forward(const float* x, int64_t T, float* y) const;

 private:
  MoeConfig cfg_;
  MoeParams p_;
};

}  // namespace ds
