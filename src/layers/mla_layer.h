// MlaLayer: Multi-head Latent Attention of Kimi Linear (HF `modeling_kimi.py` KimiMLAAttention), NoPE.
// Writes one latent [RMSNorm(c~) (eps 1e-6) ; k_pe] per new token into each sequence's latent pages,
// then attends causally over all its rows: expanded per-head K/V for prefill, the absorbed form over
// the latents for decode.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/weight_view.h"
#include "layers/layer_batch.h"
#include "layers/mla_latents.h"
#include "model/model_config.h"

namespace ds {

struct MlaParams {
  WeightView q_proj;             // [H*dq, D] (q_lora_rank == 0)
  WeightView q_a, q_b;           // [r_q, D], [H*dq, r_q] (q_lora_rank > 0, K3)
  std::vector<float> q_a_norm;   // f32 [r_q]
  WeightView kv_a;               // [kv_lora + rope, D] kv_a_proj_with_mqa
  std::vector<float> kv_a_norm;  // f32 [kv_lora] kv_a_layernorm
  WeightView kv_b;               // [H*(nope + v), kv_lora] per head rows: W_UK then W_UV
  WeightView o_proj;             // [D, H*v]
  WeightView g_proj;             // [H*v, D] sigmoid output gate (K3 mla_use_output_gate), else unset
};

enum class MlaAttnMode : uint8_t {
  Auto,      // absorbed when every sequence adds one token (decode), else expanded
  Expanded,  // per-head k_nope / v from kv_b over the whole cache (prefill form)
  Absorbed,  // scores and context over the cached latents (decode form)
};

class MlaLayer {
 public:
  static constexpr float kLatentNormEps = 1e-6f;  // HF KimiRMSNorm class default, not rms_norm_eps
  static constexpr float kQNormEps = 1e-6f;

  MlaLayer(const MlaConfig& cfg, int64_t hidden, MlaParams params);

  // y f32 [T, D] = MLA(x f32 [T, D]); latents has one view per sequence: the layer writes rows
  // [n_tokens, n_tokens + n_new) (the caller advances n_tokens afterwards) and reads rows [0, n_tokens).
  void forward(const LayerBatch& batch, std::span<const MlaLatentPages> latents, const float* x, float* y,
               MlaAttnMode mode = MlaAttnMode::Auto) const;

  const MlaConfig& config() const { return cfg_; }

 private:
  void project_q(const float* x, int64_t T, float* q) const;  // q f32 [T, H*dq]
  // o f32 [n, H*v] for the last n of the Tc rows of one sequence; q f32 [n, H*dq].
  void attend_expanded(const MlaLatentPages& c, int64_t Tc, int64_t n, const float* q, float* o) const;

  MlaConfig cfg_;
  int64_t hidden_;
  MlaParams p_;
  std::vector<float> kv_b_f32_;  // f32 [H*(nope + v), kv_lora] for the absorbed form
};

}  // namespace ds
