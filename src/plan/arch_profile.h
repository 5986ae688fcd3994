// ArchProfile: the attention and feed-forward shapes of a model of any attention family, enough to
// size its KV cache and price a prefill: dense GQA, MLA, MLA with DeepSeek Sparse Attention (an
// indexer picks index_topk keys per query), and the KDA + MLA hybrids (Kimi Linear, Kimi K3, which
// delegate to ModelProfile). Read from the public config.json fields kept under
// data/profiles/families/<name>.json (each with its source) or from a bundled Kimi profile.
// Used by the planner's economics (economics.h); the engine never reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/model_profile.h"

namespace ds {

enum class AttentionFamily : uint8_t { Gqa, Mla, MlaSparse, HybridKdaMla };
const char* to_string(AttentionFamily family);

struct ArchProfile {
  std::string name, source;
  AttentionFamily family = AttentionFamily::Gqa;
  int64_t hidden = 0, layers = 0, vocab = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;                          // GQA (kv_heads = heads: MHA)
  int64_t q_lora = 0, kv_lora = 0, qk_nope = 0, qk_rope = 0, v_head = 0;  // MLA
  int64_t index_heads = 0, index_head_dim = 0, index_topk = 0;            // DSA indexer
  int64_t indexer_layers = 0;  // layers with their own indexer keys (GLM-5.2 shares one per 4 layers)
  int64_t intermediate = 0, moe_intermediate = 0, experts = 0, top_k = 0, shared_experts = 0;
  int64_t dense_layers = 0;  // leading layers with a dense FFN (first_k_dense_replace); all if no experts
  std::optional<ModelProfile> kimi;  // HybridKdaMla: the exact profile

  // A family config name under data/profiles/families/ ("deepseek-v3", "glm-5.2", ...), a bundled
  // Kimi profile name ("kimi-k3", "kimi-linear-48b") or a path to a family JSON. ds::Error on bad input.
  static ArchProfile load(const std::string& name_or_path);
  static std::vector<std::string> bundled_names();  // every family config, Kimi profiles included

  // KV bytes per token of context, whole model (GQA: K and V of every KV head; MLA: the latent and
  // rope key; DSA adds the indexer key, fp8 + one f32 scale per 128), at kv_dtype_bytes per element.
  double kv_bytes_per_token(int kv_dtype_bytes) const;
  int64_t state_bytes() const;  // per sequence, independent of length (KDA state); 0 otherwise
  // Matmul FLOPs per prefill token, whole model: 2 x active parameters (attention projections,
  // indexer projections, dense or top-k + shared experts, router); embedding and lm_head excluded.
  double linear_flops_per_token() const;
  // Attention FLOPs of a causal prefill of n tokens, whole model (score + value products per
  // query-key pair; DSA: every query attends to min(position, index_topk) keys in the absorbed
  // latent form, and the indexer scores every causal pair; hybrids: MLA layers + chunked KDA).
  double attention_flops(int64_t n) const;
  int64_t expert_intermediate() const { return moe_intermediate; }  // m of the EP ratio
  int64_t routed_top_k() const { return top_k; }
};

}  // namespace ds
