// ModelConfig: immutable description of a Kimi Linear / Kimi K3 text model, parsed once from a
// Hugging Face config.json (plain `kimi_linear`, or the `kimi_k3` multimodal wrapper whose text
// model sits under `text_config`) and validated. Plain data; no compute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json_fwd.hpp"

namespace ds {

enum class LayerKind : uint8_t { Kda, Mla };
enum class Activation : uint8_t { Silu, Situ };

struct KdaConfig {
  int n_head = 0;       // linear_attn_config.num_heads (H); q/k heads == v heads
  int head_dim = 0;     // linear_attn_config.head_dim (K == V)
  int conv_kernel = 4;  // linear_attn_config.short_conv_kernel_size (W)
  // gate_lower_bound present -> bounded "safe" gate lb*sigmoid(exp(A_log)*(f+dt_bias)) (K3);
  // absent -> g = -exp(A_log)*softplus(f+dt_bias) (Kimi Linear).
  std::optional<float> gate_lower_bound;
  bool full_rank_output_gate = false;  // use_full_rank_gate: g_proj [H*V, hidden] instead of g_a/g_b
};

struct MlaConfig {
  int n_head = 0;        // num_attention_heads
  int q_lora_rank = 0;   // 0 = direct q_proj (Kimi Linear); >0 = q_a_proj/q_a_layernorm/q_b_proj (K3)
  int kv_lora_rank = 0;  // latent width of the cache
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;  // NoPE: these dims are not rotated (mla_use_nope)
  int v_head_dim = 0;
  bool output_gate = false;  // mla_use_output_gate: o = o_proj(attn * sigmoid(g_proj(x))) (K3)
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  int latent_dim() const { return kv_lora_rank + qk_rope_head_dim; }  // cached values per token
};

struct MoeConfig {
  int n_expert = 0;             // num_experts
  int n_expert_per_token = 0;   // num_experts_per_token (top-k)
  int n_shared_expert = 0;      // num_shared_experts
  int expert_intermediate = 0;  // moe_intermediate_size
  int first_k_dense = 0;        // first_k_dense_replace: layers [0, first_k_dense) use a dense MLP
  int layer_freq = 1;           // moe_layer_freq
  bool renormalize = true;      // moe_renormalize
  float routed_scaling = 1.0f;  // routed_scaling_factor
  int latent_dim = 0;           // routed_expert_hidden_size; 0 = no LatentMoE (Kimi Linear)
  bool latent_norm = false;     // latent_moe_use_norm
};

// quantization_config: how the checkpoint stores its routed experts (everything else is float).
struct QuantConfig {
  bool mxfp4_experts = false;  // compressed-tensors mxfp4-pack-quantized routed experts
  int group_size = 32;         // inputs per E8M0 scale (config_groups.*.weights.group_size)
  // Storage bits per routed-expert weight: 16 (bf16), or 4 + 8 / group_size for MXFP4
  // (a 4-bit E2M1 code plus one 8-bit E8M0 scale per group).
  double routed_expert_bits() const { return mxfp4_experts ? 4.0 + 8.0 / group_size : 16.0; }
};

struct ModelConfig {
  std::string model_type;           // "kimi_linear" (from the text config)
  bool multimodal_wrapper = false;  // loaded from a kimi_k3 wrapper: tensors prefixed "language_model."
  bool has_vision_config = false;   // the wrapper carries a vision tower (ignored: text model only)
  int vocab_size = 0;
  int hidden = 0;              // hidden_size (D)
  int n_layer = 0;             // num_hidden_layers
  int dense_intermediate = 0;  // intermediate_size (dense MLP layers)
  float rms_norm_eps = 1e-5f;
  Activation act = Activation::Silu;
  float situ_beta = 4.0f;          // activation_situ_beta (gate branch)
  float situ_linear_beta = 25.0f;  // activation_situ_linear_beta (up branch)
  bool tie_word_embeddings = false;
  int attn_res_block_size = 0;  // Block Attention Residuals; 0 = plain residual stream
  int pad_token_id = -1, bos_token_id = -1, eos_token_id = -1;
  int64_t max_position_tokens = 0;  // max_position_embeddings or model_max_length; 0 = unknown

  std::vector<LayerKind> layer_kind;  // [n_layer], 0-based, from the 1-based kda/full_attn lists
  KdaConfig kda;
  MlaConfig mla;
  MoeConfig moe;
  QuantConfig quant;  // quantization_config (top level or text_config)

  // Prefix of the text-model tensors in the checkpoint: "language_model." for the wrapper, else "".
  std::string tensor_prefix() const { return multimodal_wrapper ? "language_model." : ""; }
  bool is_moe_layer(int layer) const;  // layer >= first_k_dense && layer % layer_freq == 0
  int n_kda_layers() const;
  int n_mla_layers() const;

  // Parses and validates; throws ds::Error naming the key and value on bad input.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source_name);
  static ModelConfig load(const std::string& path);  // a config.json file or a checkpoint folder
  void validate() const;
};

}  // namespace ds
