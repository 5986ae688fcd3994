// SglangCache: an emulation of SGLang's MambaRadixCache for a KDA + MLA model with
// --mamba-scheduler-strategy extra_buffer, behind the same interface as the native cache so the
// same scheduler drives it (HybridCache forwards to it when CacheConfig::cache_model is "sglang").
// What it keeps of SGLang (python/sglang/srt/mem_cache/mamba_radix_cache.py, sgl-project/sglang
// PRs #11214, #14792, #31643; server_args defaults mamba_full_memory_ratio 0.9,
// mamba_track_interval 256):
//  - two pools: full-attention KV pages, and KDA state slots (one slot = one request's state over
//    every KDA layer); a running request holds a working slot and two ping-pong track buffers;
//  - a radix tree of pages; a node may hold a state (else it is a tombstone); a hit = the deepest
//    node on the matched path that holds a state, within tokens [0, prompt - 1); the state is copied
//    into the request's working slot (copy on write);
//  - states are tracked, not planned: a prefill chunk tracks at most one position, the deepest
//    track_chunk-aligned position strictly inside it; a decode step tracks when the sequence length
//    is a multiple of track_interval; the tracked state is published into the tree only when a
//    non-final prefill chunk ends (cache_unfinished_req) and when the request finishes
//    (cache_finished_req), each time at the last tracked position — KV past it is freed at finish;
//  - two LRU orders: KV evicts unlocked leaves only (with their state), then deletes the tombstone
//    ancestors left as leaves; states are evicted from any unlocked node (an interior node becomes a
//    tombstone, its KV stays); a hit refreshes the KV of its whole path (a child more recent than its
//    parent) and only the consumed state (#31643); an insert refreshes every node it walks;
//  - admission needs the prompt's remaining pages and three slots within free + evictable memory.
// No host tier (SGLang's HiMambaRadixCache is not emulated). Simulation only.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/cache_emulation.h"

namespace ds {

class SglangCache final : public CacheEmulation {
 public:
  static constexpr int kSlotsPerRequest = 3;  // working state + two ping-pong track buffers

  explicit SglangCache(const CacheConfig& config);
  const CacheConfig& config() const override { return cfg_; }

  CacheHit match(std::span<const int32_t> prompt) const override;
  std::optional<Admission> admit(std::span<const int32_t> prompt) override;
  bool reserve(SeqId seq, int64_t n_tokens_total) override;
  std::vector<PlannedCheckpoint> plan_checkpoints(SeqId seq, int64_t begin, int64_t end) override;
  CommitReport commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed) override;
  void finish(SeqId seq, std::span<const int32_t> all_tokens) override;
  void abort(SeqId seq) override;
  std::vector<CacheTransfer> take_transfers() override;
  std::span<const int32_t> page_table(SeqId seq) const override;
  int32_t live_slot(SeqId seq) const override;
  int64_t n_running() const override { return int64_t(seqs_.size()); }
  const CacheStats& stats() const override { return stats_; }
  int64_t bookkeeping_bytes() const override;
  void check_invariants() const override;  // ownership of pages and slots, locks, LRU indexes; O(all)

 private:
  struct Node {
    uint64_t key = 0;  // chained key of the pages from the root to this one
    int32_t parent = -1;
    int32_t n_children = 0;
    int32_t page = -1;   // KV page (every node but the root has one)
    int32_t state = -1;  // state slot; -1 = tombstone
    int32_t full_lock = 0, state_lock = 0;
    int32_t depth = 0;  // pages from the root
    uint64_t kv_time = 0, state_time = 0;
    bool in_leaves = false, in_states = false;  // indexed in leaves_ / states_ with these times
  };
  struct Seq {
    int64_t prompt_tokens = 0;
    int32_t last_node = 0;                 // locked node (0 = root)
    bool state_locked = false;             // the lock on last_node includes its state
    int64_t cached_pages = 0;              // pages [0, cached_pages) are tree pages (cache_protected_len)
    std::vector<int32_t> pages;            // device page of each page of the sequence
    int32_t work = -1;                     // working state slot
    std::array<int32_t, 2> track{-1, -1};  // ping-pong track buffers
    int next_track = 0;                    // buffer the next tracked state goes to
    int64_t last_track = 0;                // last tracked position, 0 = none (mamba_last_track_seqlen)
    int64_t pending_track = 0;             // tracked by a planned step not yet committed
  };
  struct Walk {
    std::vector<uint64_t> keys;
    std::vector<int32_t> nodes;  // matched nodes, depth 1..
    int32_t hit_node = 0;        // deepest matched node with a state (0 = root)
  };

  void walk(std::span<const int32_t> prompt, int64_t max_pages, Walk& w) const;
  void unindex(int32_t n);
  void reindex(int32_t n);
  void lock(Seq& s, int32_t n);
  void unlock(Seq& s);
  int32_t new_node(uint64_t key, int32_t parent, int32_t page);
  void delete_node(int32_t n);  // a leaf without lock: frees its page and state
  void evict_leaf(int32_t n);
  bool evict_pages(int64_t n_pages);  // until n_pages are free; false if impossible
  bool evict_state();                 // frees one slot; false if impossible
  int32_t alloc_page();
  int32_t alloc_slot();  // -1 if none even after eviction
  void free_slot(int32_t s);
  void resolve_track(Seq& s, int64_t n_computed);
  // Publishes pages [0, n_pages) of `tokens` and the tracked state at their end into the tree, moves
  // the sequence's lock there. Returns whether the node took the state (false: it had one).
  bool insert(Seq& s, std::span<const int32_t> tokens, int64_t n_pages, CommitReport& rep);
  void release(SeqId id);
  void update_bytes();

  CacheConfig cfg_;
  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::vector<int32_t> free_nodes_;
  std::unordered_map<uint64_t, int32_t> map_;      // chained key -> node
  std::set<std::pair<uint64_t, int32_t>> leaves_;  // unlocked leaves by KV recency (LRU first)
  std::set<std::pair<uint64_t, int32_t>> states_;  // unlocked state nodes by state recency
  std::vector<int32_t> free_pages_, free_slots_;
  int64_t tree_pages_ = 0, tree_states_ = 0, evictable_pages_ = 0;
  uint64_t tick_ = 0;
  std::unordered_map<SeqId, Seq> seqs_;
  SeqId next_seq_ = 1;
  std::vector<CacheTransfer> transfers_;
  CacheStats stats_;
};

}  // namespace ds
