// CacheStats: counters of the hybrid prefix cache (tokens, entries, bytes), plain data. Hits are
// counted at admission (HybridCache::admit), never by the side-effect-free match().
#pragma once

#include <array>
#include <cstdint>

namespace ds {

constexpr int kMaxTiers = 2;  // device, host (a third tier is designed for, not implemented)

// Why an entry left a tier.
enum class EvictReason : uint8_t {
  KvDemoted,          // KV page (and its checkpoint) moved device -> host
  KvDropped,          // KV page (and its checkpoint) dropped
  CheckpointDemoted,  // checkpoint alone moved device -> host (KV kept)
  CheckpointDropped,  // checkpoint alone dropped (KV kept)
  Count
};
const char* to_string(EvictReason reason);

struct TierStats {
  int64_t kv_bytes = 0;  // resident now
  int64_t checkpoint_bytes = 0;
  int64_t live_bytes = 0;
  int64_t peak_total_bytes = 0;
  int64_t hit_tokens = 0;  // admitted hit tokens whose KV came from this tier
  int64_t total_bytes() const { return kv_bytes + checkpoint_bytes + live_bytes; }
};

struct CacheStats {
  int64_t n_admissions = 0;
  int64_t prompt_tokens = 0;        // sum of admitted prompt lengths
  int64_t hit_tokens = 0;           // state-reachable (restorable) tokens at admission
  int64_t kv_reachable_tokens = 0;  // KV-reachable tokens at admission
  int64_t lost_tokens = 0;          // kv_reachable - hit: lost to a missing checkpoint
  int64_t miss_tokens = 0;          // prompt_tokens - hit_tokens
  int64_t loaded_bytes = 0;         // host -> device bytes reported on hits

  int64_t checkpoints_created = 0;
  int64_t checkpoints_dropped = 0;    // left the cache for good (alone or with their page)
  int64_t checkpoints_used = 0;       // restores (hits with n_hit_tokens > 0)
  int64_t checkpoints_skipped = 0;    // wanted but no room even after eviction (not planned)
  int64_t checkpoints_duplicate = 0;  // planned and written, but freed at commit (node had one)
  int64_t pages_inserted = 0;
  int64_t pages_dropped = 0;   // left the cache for good
  int64_t pages_promoted = 0;  // host -> device on admission
  int64_t failed_reserves = 0;
  int64_t failed_admissions = 0;
  int64_t room_refusals = 0;    // room requests refused up front: free + reclaimable < need
  int64_t hash_collisions = 0;  // page keys that matched a node with other token ids (miss / not cached)
  // Path holding (eviction policies that hold paths): admitted hit tokens restored from a held path,
  // and admissions made while the cache judged itself overloaded (held paths kept from new prompts);
  // a retry of an admission the scheduler just aborted is not counted again.
  int64_t held_hit_tokens = 0;
  int64_t overloaded_admissions = 0;

  std::array<int64_t, static_cast<int>(EvictReason::Count)> evictions{};  // by reason
  std::array<TierStats, kMaxTiers> tiers{};

  int64_t n_evictions(EvictReason r) const { return evictions[static_cast<int>(r)]; }
  double hit_rate() const { return prompt_tokens ? double(hit_tokens) / double(prompt_tokens) : 0.0; }
};

}  // namespace ds
