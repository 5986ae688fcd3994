// Typed weights of a Kimi Linear / Kimi K3 text model: TensorRef views into WeightFiles, bound by
// checkpoint name with shape and dtype checks. Owns the invariants "every tensor the config implies
// is present with its exact shape" and "no tensor of the text model is left unbound".
// Views stay valid while the WeightFiles they were bound from (its mapped files) lives.
// Linear weights are PyTorch layout [out, in] (y = x Wᵀ). D = hidden, H/K = KDA heads/head dim,
// Hm = MLA heads, E = experts, I = moe_intermediate, L = routed_expert_hidden_size.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/safetensors.h"

namespace ds {

// A linear weight [out, in]: dense (BF16/F16/F32), or MXFP4 (compressed-tensors
// mxfp4-pack-quantized: two E2M1 values per byte + one E8M0 scale byte per 32 inputs).
struct LinearWeight {
  TensorRef weight;                // dense: bf16|f16|f32 [out, in];  mxfp4: weight_packed u8 [out, in/2]
  std::optional<TensorRef> scale;  // mxfp4 only: weight_scale u8 (E8M0) [out, in/32]
  int64_t out = 0, in = 0;         // logical shape
  bool is_mxfp4() const { return scale.has_value(); }
};

// SwiGLU / SiTU-GLU MLP: dense layers (mlp.*), shared experts (shared_experts.*).
struct DenseMlpWeights {
  TensorRef gate_proj;  // bf16 [I, D]
  TensorRef up_proj;    // bf16 [I, D]
  TensorRef down_proj;  // bf16 [D, I]
};

// One routed expert (experts.{e}.w1/w3/w2); In = L with LatentMoE, else D.
struct ExpertWeights {
  LinearWeight w1;  // gate: [I, In]
  LinearWeight w3;  // up:   [I, In]
  LinearWeight w2;  // down: [In, I]
};

// block_sparse_moe.*
struct MoeWeights {
  TensorRef gate;                         // router bf16 [E, D]
  TensorRef e_score_correction_bias;      // f32 [E] (selection only)
  std::vector<ExpertWeights> experts;     // [E]
  std::optional<DenseMlpWeights> shared;  // shared_experts.*: [n_shared*I, D] / [D, n_shared*I]
  std::optional<TensorRef> latent_down;   // routed_expert_down_proj.weight bf16 [L, D] (K3)
  std::optional<TensorRef> latent_norm;   // routed_expert_norm.weight bf16 [L] (K3, latent_moe_use_norm)
  std::optional<TensorRef> latent_up;     // routed_expert_up_proj.weight bf16 [D, L] (K3)
};

// KDA self_attn.* (tensor names of the published Kimi Linear and K3 checkpoints).
struct KdaWeights {
  TensorRef q_proj, k_proj, v_proj;   // bf16 [H*K, D]
  TensorRef q_conv, k_conv, v_conv;   // {q,k,v}_conv1d.weight bf16|f32 [H*K, 1, W]; tap W-1 = current token
  TensorRef f_a_proj;                 // bf16 [K, D]   forget-gate low rank down
  TensorRef f_b_proj;                 // bf16 [H*K, K] forget-gate low rank up
  TensorRef a_log;                    // A_log f32, [1,1,H,1] or [N >= H]: use the first H values (K3 pads)
  TensorRef dt_bias;                  // f32 [H*K]
  TensorRef b_proj;                   // bf16 [H, D]  beta logits
  std::optional<TensorRef> g_a_proj;  // bf16 [K, D]   low-rank output gate (Kimi Linear)
  std::optional<TensorRef> g_b_proj;  // bf16 [H*K, K]
  std::optional<TensorRef> g_proj;    // bf16 [H*K, D] full-rank output gate (K3 use_full_rank_gate)
  TensorRef o_norm;                   // bf16|f32 [K] per-head RMSNorm weight shared by all heads
  TensorRef o_proj;                   // bf16 [D, H*K]
};

// MLA self_attn.* (published checkpoints). Q = qk_nope + qk_rope, C = kv_lora_rank, R = qk_rope.
struct MlaWeights {
  std::optional<TensorRef> q_proj;         // bf16 [Hm*Q, D] (q_lora_rank == 0)
  std::optional<TensorRef> q_a_proj;       // bf16 [q_lora, D] (q_lora_rank > 0)
  std::optional<TensorRef> q_a_layernorm;  // bf16 [q_lora]
  std::optional<TensorRef> q_b_proj;       // bf16 [Hm*Q, q_lora]
  TensorRef kv_a_proj;              // kv_a_proj_with_mqa bf16 [C + R, D]: rows [0,C) latent, [C,C+R) k_pe
  TensorRef kv_a_layernorm;         // bf16 [C]
  TensorRef kv_b_proj;              // bf16 [Hm*(qk_nope + v), C]: per head W_UK rows then W_UV rows
  std::optional<TensorRef> g_proj;  // bf16 [Hm*v, D] sigmoid output gate (K3 mla_use_output_gate)
  TensorRef o_proj;                 // bf16 [D, Hm*v]
};

// Block Attention Residuals parameters of one sublayer (K3).
struct AttnResWeights {
  TensorRef norm;  // *_res_norm.weight bf16 [D] (gamma, folded into the query)
  TensorRef proj;  // *_res_proj.weight bf16 [1, D] (pseudo-query w)
};

struct LayerWeights {
  LayerKind kind = LayerKind::Kda;
  TensorRef input_layernorm;               // bf16 [D]
  TensorRef post_attention_layernorm;      // bf16 [D]
  std::optional<KdaWeights> kda;           // kind == Kda
  std::optional<MlaWeights> mla;           // kind == Mla
  std::optional<DenseMlpWeights> mlp;      // !is_moe_layer: mlp.* [dense_intermediate, D]
  std::optional<MoeWeights> moe;           // is_moe_layer
  std::optional<AttnResWeights> attn_res;  // self_attention_res_* (attn_res_block_size > 0)
  std::optional<AttnResWeights> mlp_res;   // mlp_res_* (attn_res_block_size > 0)
};

struct ModelWeights {
  TensorRef embed;                           // model.embed_tokens.weight bf16 [vocab, D]
  std::vector<LayerWeights> layers;          // [n_layer]
  TensorRef final_norm;                      // model.norm.weight bf16 [D]
  TensorRef lm_head;                         // lm_head.weight bf16 [vocab, D] (== embed when tied and absent)
  std::optional<AttnResWeights> output_res;  // model.output_attn_res_* (attn_res_block_size > 0)
  std::vector<std::string> notes;            // loader notes (e.g. ignored vision tower), also logged

  // Binds every tensor the config implies; throws ds::Error naming the tensor (and both shapes /
  // the dtype) when one is missing, mis-shaped or of an unsupported dtype, and listing extra
  // tensors. Tensors without the checkpoint prefix (vision tower of the kimi_k3 wrapper) are
  // ignored with a note.
  static ModelWeights bind(const ModelConfig& cfg, const WeightFiles& ck);
};

}  // namespace ds
