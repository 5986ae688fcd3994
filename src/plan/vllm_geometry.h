// VllmGeometry: how vLLM's hybrid KV cache manager lays a KDA + MLA model out in its single block
// pool (vllm docs/design/hybrid_kv_cache_manager.md, "case 4"; mamba_cache_mode=align, the only
// mode KDA supports). Layers are grouped by the smaller layer count (the MLA layers: one attention
// group; KDA layers fill ceil(n_kda / n_mla) groups, the last padded); a block id holds one page in
// each of the group-size buffers, so one block of an attention group caches block_tokens tokens of
// every MLA layer, and one block of a KDA group holds one layer-state of each of its layers. The
// attention block size is raised until an attention page is at least one KDA state page (rounded up
// to the kernel's block alignment) and the state page is padded up to it. A KDA checkpoint takes one
// block per KDA group; a running request holds (2 + speculative tokens) blocks per KDA group.
// vLLM's "GPU KV cache size" log line reports max_concurrency x max_model_len, with
// max_concurrency = blocks / (blocks of one max_model_len request incl. its KDA blocks).
#pragma once

#include <cstdint>

#include "plan/model_profile.h"

namespace ds {

struct VllmGeometryOptions {
  int tp = 8;
  int dcp = 1;
  int kv_dtype_bytes = 1;
  int spec_tokens = 0;              // speculative draft tokens (extra live-state blocks per request)
  int64_t max_model_len = 1 << 20;  // vLLM --max-model-len (K3: 1,048,576)
  int64_t block_align_tokens = 64;  // attention kernel block alignment (see vllm_geometry.cpp)
};

struct VllmGeometry {
  int64_t block_tokens = 0;              // attention block size after page unification
  int64_t kv_bytes_per_token_layer = 0;  // per GPU per MLA layer (1/dcp of the latent under DCP)
  int64_t state_bytes_layer = 0;         // one KDA layer's recurrent + conv state, per GPU
  int64_t page_bytes = 0;                // one layer's page: block_tokens x kv_bytes_per_token_layer
  int layers_per_group = 0;              // buffers in the pool (= the MLA layer count)
  int n_kda_groups = 0;                  // KDA layers / layers_per_group, rounded up
  int64_t block_bytes = 0;               // one block id over all buffers: layers_per_group x page_bytes
  int64_t checkpoint_blocks = 0;         // blocks one KDA checkpoint takes (one per KDA group)
  int64_t live_state_blocks = 0;         // blocks a running request's live KDA state holds
  double state_padding = 0;              // page_bytes / state_bytes_layer - 1
  int64_t max_model_len = 0;

  int64_t num_blocks(double cache_bytes) const;       // whole blocks that fit (page rounding)
  int64_t reported_tokens(double cache_bytes) const;  // vLLM's "GPU KV cache size: N tokens"
};

VllmGeometry vllm_geometry(const ModelProfile& model, const VllmGeometryOptions& opt);

}  // namespace ds
