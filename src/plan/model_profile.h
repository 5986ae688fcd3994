// ModelProfile: what a serving planner needs to know about a Kimi Linear / Kimi K3 text model,
// derived from its ModelConfig plus quantisation facts: parameter counts and bytes per weight
// kind, active parameters per token, MLA KV bytes per token, KDA state bytes per sequence and
// FLOPs per token. Invariants: counts are exact products of the config's shapes (no constants
// fitted to a target), and `weights` holds one entry per WeightKind in enum order.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace ds {

enum class WeightKind : uint8_t {
  Embedding,     // embed_tokens (a lookup: never streamed as a GEMM)
  LmHead,        // lm_head
  Kda,           // KDA projections, convs, gates, norms
  Mla,           // MLA projections (incl. K3 output gate)
  DenseMlp,      // layers [0, first_k_dense)
  SharedExpert,  // shared experts of MoE layers
  RoutedExpert,  // all routed experts of all MoE layers
  Router,        // router gate + e_score_correction_bias
  LatentProj,    // LatentMoE routed_expert_down/up_proj + routed_expert_norm (K3)
  Norm,          // decoder-layer norms, final norm, Block AttnRes queries/norms
};
inline constexpr int kWeightKinds = 10;
const char* weight_kind_name(WeightKind k);

struct WeightGroup {
  int64_t params = 0;             // parameters of this kind, whole model
  int64_t replicated_params = 0;  // of which every TP rank holds a full copy (not sharded)
  double bits = 16;               // storage bits per parameter, scales included (MXFP4: 4.25)
  double bytes() const { return double(params) * bits / 8; }
  double bytes_per_gpu(int tp) const;  // sharded part / tp + replicated part
};

struct ModelProfile {
  std::string name;    // "kimi-k3", or the config path
  std::string source;  // config.json it was built from
  ModelConfig config;
  std::array<WeightGroup, kWeightKinds> weights;
  std::string routed_expert_format = "bf16";  // "bf16" or "mxfp4"

  const WeightGroup& weight(WeightKind k) const { return weights[size_t(k)]; }
  int n_moe_layers() const;
  int64_t total_params() const;
  double weight_bytes() const;                // whole model
  double weight_bytes_per_gpu(int tp) const;  // resident on each TP rank
  // Parameters touched per token: everything but the routed experts, plus top-k routed experts
  // per MoE layer. Excludes the input embedding (a row lookup, not a matmul).
  int64_t active_params_per_token() const;
  int64_t expert_params() const;  // one routed expert of one layer (w1, w2, w3)
  double expert_bytes() const;    // its stored bytes
  // Weights every step streams once on each GPU regardless of routing: all but embedding and
  // routed experts (lm_head included).
  double dense_bytes_per_gpu(int tp) const;

  // MLA latent KV cache, per token, all MLA layers: latent_dim x dtype bytes x n_mla.
  // Replicated on every TP rank (one latent "head" cannot be split).
  int64_t kv_bytes_per_token(int kv_dtype_bytes) const;
  // KDA state of one sequence, all KDA layers: recurrent S (H x K x V f32) + conv windows
  // (q, k, v: H*K x (W-1) bf16). Sharded by heads under TP.
  int64_t kda_recurrent_bytes() const;
  int64_t kda_conv_bytes() const;
  int64_t kda_state_bytes() const { return kda_recurrent_bytes() + kda_conv_bytes(); }

  // Matmul FLOPs per token, excluding attention over the context and the KDA recurrence:
  // 2 x active params, lm_head excluded (counted once per sampled token via lm_head_flops()).
  double linear_flops_per_token() const;
  double lm_head_flops() const;                  // 2 x vocab x hidden per sampled token
  double routed_linear_flops_per_token() const;  // share of linear_flops_per_token in routed experts
  // MLA attention FLOPs, whole model, for `n_new` tokens after `n_context` cached ones.
  // Prefill (n_new > 1): per head 2 (qk + v) per key, plus re-expanding the cached latent
  // through kv_b_proj for the context. Decode (n_new == 1): absorbed form, 2 (latent + kv_lora) per key.
  double mla_attention_flops(int64_t n_new, int64_t n_context) const;
  double mla_flops_per_key(bool decode) const;        // whole model, per (query, key) pair
  double mla_expand_flops_per_context_token() const;  // prefill: kv_b_proj on a cached token
  // KDA chunked-prefill FLOPs for `n_new` tokens, whole model: (n_new / C) chunks x per-head
  // chunk cost x heads x n_kda layers. Decode (n_new == 1): 7 K^2 per head per layer.
  double kda_flops(int64_t n_new, int chunk_tokens) const;
  double kda_flops_per_token(bool decode, int chunk_tokens) const;  // whole model
  // FlashKDA cost of one chunk of C tokens of one head with head dim D: 12C^3 + 8C^2 D + 6C D^2.
  static double kda_chunk_flops(int64_t chunk_tokens, int64_t head_dim);

  // Builds the profile; routed experts are stored at config.quant.routed_expert_bits().
  static ModelProfile from_config(const ModelConfig& config, std::string name);
  // A bundled name ("kimi-k3", "kimi-linear-48b"), a config.json path or a checkpoint folder.
  static ModelProfile load(const std::string& name_or_path);
};

}  // namespace ds
