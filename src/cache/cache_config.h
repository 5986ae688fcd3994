// CacheConfig: immutable sizes, tiers and policy specs of the hybrid prefix cache. The caller fills
// CacheModelSizes from its model (cache/ does not depend on src/model). validate() names the bad
// field; HybridCache validates on construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

// Per-model byte sizes (all layers together) plus a FLOP proxy used by cost-aware eviction.
struct CacheModelSizes {
  int64_t kv_bytes_per_token = 0;       // MLA: (kv_lora_rank + qk_rope_head_dim) × dtype × n_mla_layers
  int64_t checkpoint_bytes = 0;         // KDA: all layers' H×K×V f32 state + conv windows, one position
  int64_t live_state_bytes = 0;         // per running sequence (live state; + spare slots if any)
  double flops_per_token = 0;           // prefill FLOPs per token independent of context (>= 0)
  double attn_flops_per_token_ctx = 0;  // extra prefill FLOPs per token per context token (>= 0)
};

// One memory tier. Tier 0 is the device; tier 1 (optional) is host DRAM. Bandwidths are the
// tier's link to the device (bytes/s), used to report load time on a lower-tier hit.
struct CacheTier {
  std::string name = "hbm";
  int64_t capacity_bytes = 0;
  double read_bw_bytes_per_s = 0;   // tier -> device
  double write_bw_bytes_per_s = 0;  // device -> tier
};

struct CacheConfig {
  CacheModelSizes sizes;
  int64_t page_tokens = 64;                  // KV page size in tokens (also the checkpoint grid)
  std::vector<CacheTier> tiers;              // [device] or [device, host]
  std::string retention = "interval:32768";  // every-block | interval:N | semantic | prompt-end | none
  std::string eviction = "leaf-lru";         // leaf-lru | consumed-state-lru | flop-per-byte[:alpha]
                                             // | seglen[:weight]
  int64_t max_running = 4096;                // upper bound on concurrent sequences (live slots)
  int page_hash_bits = 64;  // test hook: keep only this many low bits of each page hash, which
                            // makes key collisions common (they must cost misses, never wrong hits)

  int64_t page_bytes() const { return sizes.kv_bytes_per_token * page_tokens; }
  void validate() const;  // throws ds::Error naming the field and value
};

}  // namespace ds
