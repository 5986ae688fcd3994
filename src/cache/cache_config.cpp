#include "cache/cache_config.h"

#include <cmath>

#include "cache/cache_stats.h"
#include "core/check.h"

namespace ds {

void CacheConfig::validate() const {
  constexpr int64_t kMaxBytes = int64_t{1} << 50;
  DS_CHECK(page_tokens > 0 && page_tokens <= (1 << 20),
           "cache config: page_tokens must be in [1, 2^20], got {}", page_tokens);
  DS_CHECK(sizes.kv_bytes_per_token > 0 && sizes.kv_bytes_per_token <= (int64_t{1} << 30),
           "cache config: sizes.kv_bytes_per_token must be in [1, 2^30], got {}", sizes.kv_bytes_per_token);
  DS_CHECK(sizes.checkpoint_bytes >= 0 && sizes.checkpoint_bytes <= kMaxBytes,
           "cache config: sizes.checkpoint_bytes must be in [0, 2^50], got {}", sizes.checkpoint_bytes);
  DS_CHECK(sizes.live_state_bytes >= 0 && sizes.live_state_bytes <= kMaxBytes,
           "cache config: sizes.live_state_bytes must be in [0, 2^50], got {}", sizes.live_state_bytes);
  DS_CHECK(std::isfinite(sizes.flops_per_token) && sizes.flops_per_token >= 0,
           "cache config: sizes.flops_per_token must be finite and >= 0, got {}", sizes.flops_per_token);
  DS_CHECK(std::isfinite(sizes.attn_flops_per_token_ctx) && sizes.attn_flops_per_token_ctx >= 0,
           "cache config: sizes.attn_flops_per_token_ctx must be finite and >= 0, got {}",
           sizes.attn_flops_per_token_ctx);
  DS_CHECK(!tiers.empty() && tiers.size() <= kMaxTiers,
           "cache config: need 1 or {} tiers (device[, host]), got {}", kMaxTiers, tiers.size());
  for (size_t i = 0; i < tiers.size(); ++i) {
    const CacheTier& t = tiers[i];
    DS_CHECK(!t.name.empty(), "cache config: tiers[{}].name is empty", i);
    DS_CHECK(t.capacity_bytes >= 0 && t.capacity_bytes <= kMaxTierBytes,
             "cache config: tiers[{}] ({}) capacity_bytes must be in [0, 2^60], got {}", i, t.name,
             t.capacity_bytes);
    DS_CHECK(std::isfinite(t.read_bw_bytes_per_s) && t.read_bw_bytes_per_s >= 0,
             "cache config: tiers[{}] ({}) read_bw_bytes_per_s must be >= 0, got {}", i, t.name,
             t.read_bw_bytes_per_s);
    DS_CHECK(std::isfinite(t.write_bw_bytes_per_s) && t.write_bw_bytes_per_s >= 0,
             "cache config: tiers[{}] ({}) write_bw_bytes_per_s must be >= 0, got {}", i, t.name,
             t.write_bw_bytes_per_s);
  }
  DS_CHECK(max_running > 0 && max_running <= (1 << 24),
           "cache config: max_running must be in [1, 2^24], got {}", max_running);
  DS_CHECK(page_hash_bits >= 1 && page_hash_bits <= 64,
           "cache config: page_hash_bits must be in [1, 64], got {}", page_hash_bits);
}

}  // namespace ds
