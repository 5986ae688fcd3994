// Internal state of HybridCache (not for the scheduler): the prefix tree, per-tier block and state
// pools, eviction queues, running sequences. Split over hybrid_cache.cpp (API), cache_eviction.cpp
// (room making, demotion, drops) and cache_invariants.cpp. Owns: tier byte accounting == what the
// pools hold; every page/slot has exactly the owners its refcount says.
#pragma once

#include <array>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cache/block_pool.h"
#include "cache/eviction_policy.h"
#include "cache/eviction_queue.h"
#include "cache/hybrid_cache.h"
#include "cache/page_key_memo.h"
#include "cache/prefix_tree.h"
#include "cache/retention_policy.h"
#include "cache/reuse_monitor.h"
#include "cache/state_pool.h"

namespace ds {

enum class ByteKind : uint8_t { Kv, Checkpoint, Live };

// A device checkpoint slot a sequence holds between plan_checkpoints() and commit()/finish(): the
// forward pass writes the state at `position` into it.
struct PendingCheckpoint {
  int64_t position = 0;
  int32_t slot = -1;
  CheckpointReason reason = CheckpointReason::Block;
};

// One admitted sequence. path[i] is the tree node of page i (locked by this sequence); pages[i]
// is the device page backing tokens [i·P, (i+1)·P) (the node's page, or a duplicate the sequence
// computed itself when the tree already had that prefix).
struct CacheSeq {
  int64_t prompt_tokens = 0;
  int64_t hit_tokens = 0;
  int64_t branch_tokens = 0;     // semantic branch point found at admission (0 = none)
  bool held = false;             // restored from a held path (holds_paths): stays held at release
  int64_t reserved_tokens = 0;   // tokens with a page
  int64_t committed_tokens = 0;  // tokens already inserted / checkpointed
  int32_t live_slot = -1;
  bool tree_closed = false;                // a key collision stopped insertion for this sequence
  uint64_t tail_key = 0;                   // key of path.back() (root key when empty)
  std::vector<int32_t> pages;              // device page ids
  std::vector<int32_t> path;               // tree nodes, one per committed page
  std::vector<PendingCheckpoint> pending;  // planned, not yet committed (ascending positions)
  PendingCheckpoint decode_end{0, -1, CheckpointReason::DecodeEnd};  // semantic: latest boundary
};

// Result of walking a prompt down the tree.
struct TreeWalk {
  std::vector<int32_t> path;  // node per matched page (KV-reachable)
  int64_t hit_pages = 0;      // deepest page boundary with a checkpoint
  bool collision = false;     // stopped at a node whose key matched but whose tokens did not
};

struct HybridCache::Impl {
  explicit Impl(const CacheConfig& c);

  CacheConfig cfg;
  int n_tiers = 1;
  int64_t page_bytes = 0, ckpt_bytes = 0, live_bytes = 0;
  uint64_t hash_mask = ~uint64_t{0};
  std::unique_ptr<RetentionPolicy> retention;
  std::unique_ptr<EvictionPolicy> eviction;
  PrefixTree tree;
  std::vector<BlockPool> pages;   // [n_tiers]
  std::vector<StatePool> states;  // [n_tiers] (live slots only in tier 0)
  std::array<EvictionQueue, kMaxTiers> kv_queue, ckpt_queue;
  std::array<EvictionQueue, kMaxTiers> stranded_queue;  // leaves without a checkpoint (drops_stranded_first)
  std::array<EvictionQueue, kMaxTiers> superseded_queue;  // checkpoints alone (drops_superseded_checkpoints)
  std::array<EvictionQueue, kMaxTiers> held_queue;        // held KV leaves (holds_paths), oldest first
  ReuseMonitor reuse;                                     // reuse distances and ghosts (holds_paths)
  int64_t decode_end_hits = 0, prompt_end_hits = 0;       // admissions restoring from each reason
  // Bytes per tier that room making could free: KV of unlocked nodes, checkpoints of unlocked nodes
  // (and of locked ones where checkpoints leave alone). make_room refuses up front when free +
  // reclaimable < need, so a request that cannot fit evicts nothing (as vLLM's allocator and
  // SGLang's admission check do) instead of wiping every unlocked entry and failing anyway.
  std::array<int64_t, kMaxTiers> reclaimable{};
  // Held paths (holds_paths): unlocked device bytes on held nodes, not reclaimable while
  // admission_mode is set (room for a new request's prompt while other requests run).
  static constexpr double kHeldShare = 0.7;  // at most this share of the device budget is held
  int64_t reclaimable_held = 0;
  bool admission_mode = false;
  // Running mean (over ~32 evictions) of the share of evicted path ends still inside the reuse
  // horizon: above one half, the cache evicts paths that will be reused (demand exceeds capacity).
  double live_evictions = 0;
  bool overloaded() const { return live_evictions > 0.5; }
  // Requests announced (HybridCache::announce: every arrival the scheduler queues) and finished;
  // while a request is being admitted, waiting_others = the requests still waiting besides it.
  int64_t n_arrived = 0, n_finished = 0, waiting_others = 0;
  // Room for a new request's prompt may not come from held paths: overloaded, other requests running
  // (admission_mode) and, for blocks_only_behind_queue, another request waiting behind this one.
  bool blocks_for_held() const {
    return admission_mode && overloaded() && (!eviction->blocks_only_behind_queue() || waiting_others > 0);
  }
  std::unordered_map<SeqId, CacheSeq> seqs;
  SeqId next_seq = 1;
  // Eviction policies that use arrivals: node -> arrival rank of the earliest waiting request whose
  // prompt walks through it (announce()); erased when a sequence is admitted along it or it is dropped.
  std::unordered_map<int32_t, uint32_t> pending;
  uint32_t n_announced = 0;
  int32_t retry_node = -2;    // hit node (-1: none) and prompt length of the last admission aborted
  int64_t retry_tokens = -1;  // before computing anything: its next admit() is a retry, not a new use
  uint32_t tick = 0;          // admissions so far (recency clock; 2^32 admissions max)
  // Tick of the last admission whose prompt left a cached path inside it (a page with no state,
  // the path going on past it); 0 = none yet.
  uint32_t last_mid_fork = 0;
  bool forks_mid_path() const;  // one within the reuse horizon (64 admissions without one), not overloaded
  int32_t pinned_ckpt = -1;     // checkpoint being restored by admit(): not evictable
  CacheStats stats;
  std::vector<CacheTransfer> transfers;  // decided, not yet taken by the engine
  mutable PageKeyMemo key_memo;          // key chains of prompts looked up recently (walk)

  // hybrid_cache.cpp
  uint64_t page_hash(std::span<const int32_t> tokens) const;  // hash_page, masked by page_hash_bits
  void walk(std::span<const int32_t> prompt, TreeWalk& out) const;
  CacheHit hit_of(const TreeWalk& w) const;
  CacheSeq& seq_at(SeqId id);
  const CacheSeq& seq_at(SeqId id) const;
  void insert_pages(CacheSeq& s, std::span<const int32_t> tokens, int64_t n_pages);
  int32_t allocate_checkpoint_slot();  // device slot with its bytes charged, or -1 (no room)
  void free_checkpoint_slot(int32_t slot);
  void attach_checkpoint(int32_t node, int32_t slot, CheckpointReason reason);
  bool hand_to_node(CacheSeq& s, const PendingCheckpoint& c, CommitReport* report);
  void release(SeqId id);

  // cache_eviction.cpp
  int64_t free_bytes(int tier) const;
  void account(int32_t node, int sign);  // adds (+1) / removes (-1) the node's reclaimable bytes
  void lock(int32_t node);
  bool unlock(int32_t node);  // true: now unlocked
  void charge(int tier, ByteKind kind, int64_t delta_bytes);
  bool make_room(int tier, int64_t bytes);
  bool evict_one(int tier);
  bool kv_unit_valid(int tier, const EvictionEntry& e) const;
  bool ckpt_unit_valid(int tier, const EvictionEntry& e) const;
  bool ckpt_units(int tier) const;
  bool superseded_valid(int tier, const EvictionEntry& e) const;
  void observe_reuse(std::span<const int32_t> prompt, const TreeWalk& w);  // before the hit path is refreshed
  void queue_superseded(const CacheSeq& s);  // the sequence's unlocked superseded checkpoints
  void set_held(int32_t node, bool held);
  void expire_held();
  void hold_path(const CacheSeq& s);    // at release: the path joins (or stays in) the held set
  double kv_score(int32_t node) const;  // KV-leaf eviction score (policy + arrivals)
  void queue_kv(int32_t node);
  void queue_ckpt(int32_t node);
  bool demote_node(int32_t node);
  void drop_node(int32_t node);
  void evict_checkpoint(int32_t node);
  void drop_checkpoint(int32_t node);
  void after_child_left(int32_t parent);
  void maybe_compact(int tier);

  // cache_invariants.cpp
  void check_invariants() const;
};

}  // namespace ds
