// Sigmoid top-k MoE router of MoeLayer (Kimi Linear and K3): f32 sigmoid
// scores, selection by score + e_score_correction_bias, mixture weights from the UNBIASED scores,
// renormalised (when configured and k > 1) and scaled by routed_scaling_factor (HF
// `modeling_kimi.py` KimiMoEGate, vLLM `kimi_linear.py`).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace ds {

// Routing result for T tokens: expert ids and mixture weights, k per token.
struct MoeRouting {
  int k = 0;
  std::vector<int32_t> expert;  // I32 [T, k], by descending selection score (ties: lower id)
  std::vector<float> weight;    // f32 [T, k], final mixture weights (renormalised, scaled)
};

// router_logits f32 [T, n_expert] -> routing; correction_bias f32 [n_expert] or empty (none).
MoeRouting route_sigmoid_topk(const MoeConfig& cfg, const std::vector<float>& correction_bias,
                              const float* router_logits, int64_t T);

}  // namespace ds
