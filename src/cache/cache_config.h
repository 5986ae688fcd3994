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

inline constexpr int64_t kMaxTierBytes = int64_t{1} << 60;  // capacity limit of one tier

// One memory tier. Tier 0 is the device; tier 1 (optional) is host DRAM. Bandwidths are the
// tier's link to the device (bytes/s), used to report load time on a lower-tier hit.
struct CacheTier {
  std::string name = "hbm";
  int64_t capacity_bytes = 0;
  double read_bw_bytes_per_s = 0;   // tier -> device
  double write_bw_bytes_per_s = 0;  // device -> tier
};

// vLLM's hybrid allocator, emulated by cache_model "vllm" (vllm_cache.h). Sizes in blocks of
// page_tokens tokens of every MLA layer (one KDA group's layer states fit the same block).
struct VllmCacheConfig {
  int64_t num_blocks = 0;          // device pool
  int kda_groups = 1;              // blocks per KDA checkpoint (one per layer group)
  int live_blocks = 2;             // blocks a running request's live state holds: (2 + spec) x groups
  int64_t retention_interval = 0;  // 0: latest replay boundary + shared-prefix junctions; N: also every N
  int64_t host_blocks = 0;         // CPU offload connector capacity (0 = none)
  int64_t block_bytes = 0;         // bytes per block per GPU (statistics, host transfers)
};

// SGLang's MambaRadixCache with --mamba-scheduler-strategy extra_buffer, emulated by cache_model
// "sglang" (sglang_cache.h). Two separate pools: full-attention KV in pages of page_tokens tokens,
// and whole-request KDA states (every KDA layer of one request) in slots.
struct SglangCacheConfig {
  int64_t kv_pages = 0;          // full-attention KV pool
  int64_t state_slots = 0;       // Mamba/KDA state pool (--max-mamba-cache-size)
  int slots_per_request = 3;     // a running request's working state + its two ping-pong track buffers
  int64_t track_interval = 256;  // --mamba-track-interval (SGLang default 256): decode-side tracking
  int64_t track_chunk = 64;      // extend-side tracking alignment (FLA chunk size, mamba_cache_chunk_size)
  int64_t page_bytes = 0;        // bytes of one KV page per GPU (statistics)
  int64_t state_bytes = 0;       // bytes of one state slot per GPU (statistics, restore copies)
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
  // Which engine's cache to run: "deltaserve" (this cache), "vllm" (vLLM's hybrid allocator,
  // emulated: vllm_cache.h, sized by `vllm`) or "sglang" (SGLang's Mamba radix cache, emulated:
  // sglang_cache.h, sized by `sglang`). For an emulation, retention, eviction and capacities are the
  // engine's; sizes, tiers[0] bandwidths and page_tokens still apply.
  std::string cache_model = "deltaserve";
  VllmCacheConfig vllm;
  SglangCacheConfig sglang;

  int64_t page_bytes() const { return sizes.kv_bytes_per_token * page_tokens; }
  void validate() const;  // throws ds::Error naming the field and value
};

}  // namespace ds
