// EvictionPolicy: the order in which unlocked cache entries leave a tier (lowest score first).
// Two kinds of unit: a KV leaf (a node with no children in the tier: its page AND its checkpoint
// go together) and, for policies that say so, a checkpoint alone (dropped or demoted, KV kept).
// Scores are fixed when a unit is queued (heap-friendly); recency is a logical tick (one per
// admission). Specs and what each drops:
//   leaf-lru                  KV leaves by last use (whole hit path refreshed); checkpoints only
//                             leave with their page (KV+checkpoint together).
//   consumed-state-lru        KV leaves by last use + checkpoints alone by last CONSUMED use (a hit
//                             refreshes only the checkpoint it restored; SGLang #31643).
//   flop-per-byte[:A[:H]]     Marconi: recency/H + A·value, value = prefill FLOPs the checkpoint
//                             saves per byte it holds, squashed to [0,1). Both unit kinds. A=1,H=64.
//   seglen[:W[:H]]            SegLen: W·recency/H + (1-W)·value, value = replay length to the
//                             nearest ancestor checkpoint, squashed to [0,1). Both kinds. W=0.85.
//   boundary-aware            KV leaves past their path's deepest checkpoint (stranded: no hit can
//                             end there) first, dropped even with a host tier; then superseded
//                             checkpoints alone (a deeper checkpoint on the same unforked path serves
//                             every prompt that follows it; while overloaded, or while more hits
//                             restore from decode-end states than from prompt ends), oldest first;
//                             then KV leaves by last use, FLOP-per-byte value as the tie-break. Held
//                             paths: a released sequence's whole path joins a held set while held
//                             bytes stay under 70 % of the device budget (a sequence restored from a held
//                             path keeps it; over the share, that member leaves). While the cache is
//                             overloaded — more than half of the recently evicted path ends were
//                             inside the reuse horizon (ReuseMonitor): they would have been reused —
//                             held leaves leave after all others, and never to make room for a new
//                             request's prompt while other requests run (the request waits instead),
//                             so a subset of sessions keeps whole paths rather than every session a
//                             part of one. Held leaves unused for longer than the horizon (ended
//                             sessions) are released. Not overloaded: one LRU order over all leaves.
//   boundary-aware:queue      the same, and KV leaves on the path of a waiting request
//                             (HybridCache::announce) leave after all others, latest arrival first.
//   boundary-aware:queued     the same as boundary-aware, but a new request's prompt waits for held
//                             bytes only while another request is queued behind it (requests
//                             announced, not finished and not running); the only one waiting takes
//                             held paths (the oldest first) rather than idle the running lanes.
//   boundary-aware:queue-overload  :queue for the requests that arrive while the cache is
//                             overloaded only; below the knee the same order as boundary-aware.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cache/cache_config.h"

namespace ds {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string name() const = 0;
  // true: checkpoints are units of their own (drop/demote the state, keep the KV).
  virtual bool evicts_checkpoints_alone() const = 0;
  // true: checkpoint_value() needs the replay length (tokens back to the nearest ancestor checkpoint).
  virtual bool uses_replay_tokens() const { return false; }
  // Value of a new checkpoint at end position end_tokens whose replay segment is replay_tokens.
  virtual float checkpoint_value(int64_t replay_tokens, int64_t end_tokens) const { return 0.0f; }
  // Score of a KV leaf last used at `access` (its checkpoint's value when it has one, else 0).
  virtual double kv_score(uint64_t access, float ckpt_value) const = 0;
  // Score of a checkpoint unit last used (consumed or created) at `ckpt_access`.
  virtual double checkpoint_score(uint64_t ckpt_access, float ckpt_value) const = 0;
  // true: a KV leaf without a checkpoint (its page lies past the deepest checkpoint of its path, so
  // no hit can use it) leaves before any other unit, oldest first, and is dropped, not demoted.
  virtual bool drops_stranded_first() const { return false; }
  // true: KV leaves on the cached path of a waiting request (HybridCache::announce) leave after
  // every other KV leaf, the latest arrival first (the waiting queue is admitted in arrival order).
  virtual bool uses_arrivals() const { return false; }
  // true (uses_arrivals): only arrivals while the cache is overloaded count as waiting (HybridCache).
  virtual bool arrivals_only_under_overload() const { return false; }
  // true: a checkpoint followed, without a fork, by a deeper checkpoint on its path (superseded)
  // leaves alone, after stranded leaves and before any other unit, while more hits restore from
  // decode-end checkpoints than from prompt-end ones (the next prompts extend the decoded tokens).
  virtual bool drops_superseded_checkpoints() const { return false; }
  // true: the cache holds a subset of paths back from admissions (see boundary-aware above).
  virtual bool holds_paths() const { return false; }
  // true (holds_paths): a prompt is refused for held bytes only while another request waits.
  virtual bool blocks_only_behind_queue() const { return false; }
};

std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& spec, const CacheModelSizes& sizes,
                                                     int64_t page_tokens);

}  // namespace ds
