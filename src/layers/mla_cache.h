// MlaCache: the latent KV cache of one MLA layer for one sequence: per token the absorbed-MLA entry
// [RMSNorm(c~) ; k_pe] (kv_lora_rank + qk_rope_head_dim f32 values). Invariant:
// latent.size() == n_tokens * latent_dim; rows are in token order and never rewritten.
#pragma once

#include <cstdint>
#include <vector>

namespace ds {

struct MlaCache {
  int latent_dim = 0;         // kv_lora_rank + qk_rope_head_dim
  int64_t n_tokens = 0;       // cached positions
  std::vector<float> latent;  // f32 [n_tokens, latent_dim]

  void init(int latent_dim_) {
    latent_dim = latent_dim_;
    n_tokens = 0;
    latent.clear();
  }
  const float* row(int64_t t) const { return latent.data() + t * latent_dim; }
};

}  // namespace ds
