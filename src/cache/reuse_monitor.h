// ReuseMonitor: the cache's own view of how far apart reuses of a cached path are, measured online
// without any knowledge of sessions or of the future. Two inputs:
//  - ghost entries: when a checkpointed node (a point a later hit could restore from) is dropped,
//    its chained page key and last-use tick are remembered in a bounded FIFO table; a later prompt
//    that walks through that key is a "ghost hit" (a hit a larger cache would have served);
//  - reuse distances: at every admission, the ticks since the deepest checkpointed point of the
//    prompt (resident or ghost) was last used.
// From the recent distances it derives the reuse horizon: a path unused for longer than the
// horizon is predicted dead (its session ended); a cache that has to evict paths younger than the
// horizon is overloaded (its working set exceeds the budget). Ticks are admissions. Deterministic;
// add/find O(1) expected, horizon() O(1) (recomputed every kWindow / 8 samples in O(kWindow)).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace ds {

class ReuseMonitor {
 public:
  static constexpr int kWindow = 64;         // recent reuse distances kept
  static constexpr int64_t kGhosts = 16384;  // ghost entries kept (oldest forgotten first)

  // A checkpointed node with chained key `key`, last used at tick `last_use`, left the cache.
  void add_ghost(uint64_t key, uint32_t last_use);
  // Last-use tick of a remembered ghost with this key (and forgets it: one ghost hit per drop).
  std::optional<uint32_t> take_ghost(uint64_t key);
  // A prompt reused a point last used `distance` ticks ago.
  void add_distance(uint32_t distance);
  // Ticks beyond which an unused path is predicted dead: 1.5 x the 90th percentile of the recent
  // distances; 0 until kWindow / 8 distances were seen (no prediction: every path may be dead).
  uint32_t horizon() const { return horizon_; }
  int64_t n_ghost_hits() const { return n_ghost_hits_; }
  int64_t n_distances() const { return n_distances_; }
  int64_t memory_bytes() const;

 private:
  std::unordered_map<uint64_t, uint32_t> ghosts_;
  std::vector<uint64_t> ghost_fifo_;  // ring of keys in insertion order
  int64_t ghost_next_ = 0;
  std::array<uint32_t, kWindow> recent_{};
  int64_t n_distances_ = 0, n_ghost_hits_ = 0;
  uint32_t horizon_ = 0;
};

}  // namespace ds
