// VllmCache: an emulation of vLLM's hybrid KV cache manager for a KDA + MLA model (one block pool,
// mamba_cache_mode=align), behind the same interface as the native cache so the same scheduler
// drives it (HybridCache forwards to it when CacheConfig::cache_model is "vllm"). What it keeps of
// vLLM (docs/design/hybrid_kv_cache_manager.md; vllm/v1/core/block_pool.py, kv_cache_manager.py,
// single_type_kv_cache_manager.py):
//  - one pool of num_blocks block ids; a block caches page_tokens tokens of every MLA layer, or one
//    KDA layer-group's state; a checkpoint takes one block per KDA group, a running request's live
//    state (2 + speculative) blocks per group;
//  - blocks are cached by the chained hash of the tokens up to their end (a state block by that
//    hash and its group); a hit = the longest run of cached attention blocks from the start, cut
//    back to the deepest boundary where every KDA group has a cached state (the intersection),
//    within tokens [0, prompt - 1);
//  - admission only when the whole prompt fits in the free blocks (scheduler_reserve_full_isl,
//    on by default since vLLM 0.19), running requests grow chunk by chunk;
//  - one free queue (LRU) of blocks with no holder, cached or not: freeing a request appends its
//    blocks, each group's in reverse order (the tail is evicted first); a hit takes its blocks out
//    of the queue; allocation pops the head and evicts whatever it held, so a block in the middle of
//    a cached prefix can go while the blocks after it stay (and become unreachable);
//  - retention: states are kept only at the latest replay boundary (the prompt's last block
//    boundary), at shared-prefix junctions (where the cached attention prefix outruns the cached
//    states) and, with retention_interval N > 0, every N tokens; decode states are not kept
//    (VLLM_PREFIX_CACHE_RETAIN_DECODE_CHECKPOINTS off);
//  - host tier (host_blocks > 0): the CPU offload connector: every block cached on the device is
//    also stored in a host LRU (eager offload); a lookup extends the device hit with host blocks
//    (loaded before the step, counted as external hits).
// Simulation only: block ids are bookkeeping for the simulated executor, not buffers.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/cache_emulation.h"
#include "cache/page_key_memo.h"

namespace ds {

class VllmCache final : public CacheEmulation {
 public:
  explicit VllmCache(const CacheConfig& config);
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
  void check_invariants() const override;  // refcounts = holders, free queue, maps; O(blocks)

 private:
  struct Block {
    int32_t ref = 0;
    uint64_t key = 0;   // 0: holds nothing cached
    int8_t group = -1;  // -1 attention, g >= 0 KDA group g
    bool in_free = false;
    int32_t prev = -1, next = -1;  // free queue links
  };
  struct Seq {
    int64_t prompt_tokens = 0;
    int64_t committed_blocks = 0;  // attention blocks already cached
    int64_t junction_tokens = 0;   // shared-prefix junction to retain a state at (0 = none)
    uint64_t tail_key = 0;         // chained key of block committed_blocks - 1
    std::vector<int32_t> pages;    // attention blocks
    std::vector<uint64_t> keys;    // key of each committed attention block
    std::vector<int32_t> held;     // state blocks held (restored hit, live state)
    std::vector<std::pair<int64_t, std::vector<int32_t>>> planned;  // position -> one block per group
  };
  struct Walk {
    std::vector<uint64_t> keys;   // per full block within [0, prompt - 1), as far as the scans read
    int64_t attn_blocks = 0;      // device attention hit
    int64_t hit_blocks = 0;       // device hybrid hit (state at its end)
    int64_t host_hit_blocks = 0;  // >= hit_blocks: with the host tier
  };

  void walk(std::span<const int32_t> prompt, Walk& w) const;
  CacheHit hit_of(const Walk& w) const;
  uint64_t state_key(uint64_t block_key, int group) const;
  bool device_has(uint64_t k) const { return map_.count(k) != 0; }
  bool host_has(uint64_t k) const { return host_map_.count(k) != 0; }
  int64_t n_free() const { return n_free_; }
  void touch(int32_t b);
  int32_t pop_free();
  void free_block(int32_t b);
  void cache_block(int32_t b, uint64_t key, int group);
  void host_store(uint64_t key);
  void release(SeqId id);
  void add_bytes(int64_t kv_blocks, int64_t ckpt_blocks, int64_t live_blocks);

  CacheConfig cfg_;
  std::vector<Block> blocks_;
  int32_t head_ = -1, tail_ = -1;  // free queue: head is evicted first
  int64_t n_free_ = 0;
  std::unordered_map<uint64_t, int32_t> map_;  // cached key -> block (attention key or state key)
  std::list<uint64_t> host_lru_;               // front = least recently stored or used
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> host_map_;
  std::unordered_map<SeqId, Seq> seqs_;
  SeqId next_seq_ = 1;
  std::vector<CacheTransfer> transfers_;
  CacheStats stats_;
  mutable PageKeyMemo memo_;  // key chains of prompts looked up recently (held requests)
};

}  // namespace ds
