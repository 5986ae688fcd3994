#include "plan/vllm_geometry.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace ds {

// Block alignment: vLLM rounds the attention block size up to a multiple of the attention
// backend's kernel block size. Observed: Kimi K3 TP8 on B300, bf16 KV -> 768 tokens (LMCache
// docs/source/recipes/kimi_k3.rst; a 706.7-token minimum, so the multiple is 64, 128 or 256);
// Kimi-Linear with the Triton MLA backend -> 944 / 1888 tokens (TP2 / TP1, multiples of 16). 64,
// the smallest multiple consistent with the B300 observation, is the default.
VllmGeometry vllm_geometry(const ModelProfile& model, const VllmGeometryOptions& opt) {
  DS_CHECK(opt.tp >= 1 && opt.dcp >= 1 && opt.tp % opt.dcp == 0, "vLLM geometry: bad tp {} / dcp {}", opt.tp,
           opt.dcp);
  DS_CHECK(opt.block_align_tokens >= 1 && opt.max_model_len >= 1 && opt.spec_tokens >= 0,
           "vLLM geometry: bad alignment {} / max_model_len {} / spec tokens {}", opt.block_align_tokens,
           opt.max_model_len, opt.spec_tokens);
  const ModelConfig& c = model.config;
  const int n_mla = c.n_mla_layers(), n_kda = c.n_kda_layers();
  DS_CHECK(n_mla > 0, "vLLM geometry: {} has no full-attention layer", model.name);
  VllmGeometry g;
  g.max_model_len = opt.max_model_len;
  g.kv_bytes_per_token_layer =
      (int64_t(c.mla.latent_dim()) * opt.kv_dtype_bytes + opt.dcp - 1) / opt.dcp;  // DCP splits tokens
  g.state_bytes_layer = n_kda > 0 ? (model.kda_state_bytes() / n_kda + opt.tp - 1) / opt.tp : 0;
  const int64_t min_tokens =
      (g.state_bytes_layer + g.kv_bytes_per_token_layer - 1) / g.kv_bytes_per_token_layer;
  g.block_tokens =
      std::max<int64_t>(opt.block_align_tokens, (min_tokens + opt.block_align_tokens - 1) /
                                                    opt.block_align_tokens * opt.block_align_tokens);
  g.page_bytes = g.block_tokens * g.kv_bytes_per_token_layer;
  g.layers_per_group = n_kda > 0 ? std::min(n_mla, n_kda) : n_mla;
  g.n_kda_groups = n_kda > 0 ? (n_kda + g.layers_per_group - 1) / g.layers_per_group : 0;
  g.block_bytes = int64_t(g.layers_per_group) * g.page_bytes;
  g.checkpoint_blocks = g.n_kda_groups;
  g.live_state_blocks = int64_t(2 + opt.spec_tokens) * g.n_kda_groups;
  g.state_padding = g.state_bytes_layer > 0 ? double(g.page_bytes) / double(g.state_bytes_layer) - 1 : 0;
  return g;
}

int64_t VllmGeometry::num_blocks(double cache_bytes) const {
  return block_bytes > 0 ? int64_t(std::floor(std::max(0.0, cache_bytes) / double(block_bytes))) : 0;
}

int64_t VllmGeometry::reported_tokens(double cache_bytes) const {
  // MLA groups need one block per block_tokens of the longest request (a full-attention group per
  // n_mla layers: exactly one here); each KDA group needs its live-state blocks.
  const int64_t per_request = (max_model_len + block_tokens - 1) / block_tokens + live_state_blocks;
  const double max_concurrency = double(num_blocks(cache_bytes)) / double(per_request);
  return int64_t(max_concurrency * double(max_model_len));
}

}  // namespace ds
