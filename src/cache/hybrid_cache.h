// HybridCache: the scheduler-facing facade of the hybrid prefix cache (paged MLA KV + KDA state
// checkpoints over device / host tiers). The scheduler sees sequences, token counts and a CacheHit,
// and hands the executor page ids, slots and transfers as plain data; it never touches nodes. Owns:
// one byte budget per tier covering KV pages, checkpoints and live states; locked (in-flight)
// entries are never evicted. Bookkeeping only: executors own the buffers and perform the copies
// listed by take_transfers(). Rules (docs/cache_design.md):
//  - Only full pages (page_tokens) are cached; a partial last page is recomputed.
//  - Checkpoints sit only on page boundaries; a wanted position p is rounded DOWN to a page
//    boundary (vLLM "align" style). A hit = deepest page boundary with KV for every page before it
//    AND a checkpoint exactly there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/cache_config.h"
#include "cache/cache_stats.h"
#include "cache/cache_transfer.h"

namespace ds {

using SeqId = int64_t;

// Result of a lookup. All lengths are in tokens from the start of the prompt and are multiples of
// page_tokens. n_hit_tokens <= n_kv_tokens <= prompt length (rounded down to a page).
struct CacheHit {
  int64_t n_hit_tokens = 0;         // restorable for every layer type: start prefill here
  int64_t n_kv_tokens = 0;          // KV pages cover this prefix (may lack a checkpoint at its end)
  int64_t n_lost_tokens = 0;        // n_kv_tokens - n_hit_tokens: lost to a missing checkpoint
  int64_t n_hit_device_tokens = 0;  // part of n_hit_tokens whose KV is in tier 0 (device)
  int64_t n_hit_host_tokens = 0;    // part of n_hit_tokens whose KV is in tier 1 (host)
  bool checkpoint_on_host = false;  // the restored checkpoint is read from tier 1
  int64_t bytes_to_load = 0;        // host -> device bytes to move before computing (KV + checkpoint)
  double load_s = 0;                // bytes_to_load / tier-1 read bandwidth (executor may charge it)
};

// Adds one admission of a prompt of `prompt_tokens` with this hit to `stats` (hits, misses, loaded
// bytes, hit tokens per tier); shared by HybridCache and the emulated engine caches.
void count_admission(CacheStats& stats, int64_t prompt_tokens, const CacheHit& hit);

// A successful admission: the sequence handle and the hit it was admitted with (the tree may have
// changed since an earlier match(), so use THIS hit: n_computed_tokens starts at hit.n_hit_tokens).
struct Admission {
  SeqId seq = -1;
  CacheHit hit;
  CheckpointRef restore_from;  // the hit's checkpoint (a restore transfer into the live slot is logged)
};

// What commit() did with the checkpoints planned for the committed range.
struct CommitReport {
  int64_t n_pages_inserted = 0;  // pages that became new tree nodes
  std::vector<int64_t> kept;     // positions whose planned slot now belongs to a tree node
  std::vector<int64_t> dropped;  // positions whose slot was freed: the node already had a
                                 // checkpoint, or the page could not enter the tree
};

class HybridCache {
 public:
  // Validates the config (ds::Error naming the field on bad sizes / specs / tiers).
  explicit HybridCache(const CacheConfig& config);
  ~HybridCache();
  HybridCache(const HybridCache&) = delete;
  HybridCache& operator=(const HybridCache&) = delete;

  const CacheConfig& config() const;

  // Lookup without side effects (no stats, no recency refresh). Cost O(pages of the prompt).
  CacheHit match(std::span<const int32_t> prompt) const;

  // A request for `prompt` arrived and waits for admission. Eviction policies that use arrivals
  // (boundary-aware) keep the cached path of a waiting request longer than unannounced paths, the
  // earliest arrival longest: the waiting queue is admitted in arrival order, so its head reuses
  // its path first. Cleared when a sequence for the path is admitted. No-op for other policies and
  // for the emulated caches. Cost O(pages of the prompt).
  void announce(std::span<const int32_t> prompt);

  // Starts a sequence for `prompt`: re-matches, locks the hit path, takes a fresh live-state slot
  // and logs the restore (copy-on-write) of the hit checkpoint into it, promotes host-tier hit pages
  // to the device (evicting unlocked entries as needed; transfers logged), records hit statistics. Only full
  // pages inside [0, prompt.size() - 1) can hit, so at least one token is always computed. nullopt = no
  // device room for the live state and the promoted pages now (no sequence created, though unlocked entries
  // may have been evicted; the caller retries later or preempts someone). On nullopt, `refused_hit`
  // (when given) receives what match(prompt) returns now, without a second lookup when nothing was
  // evicted (a request held back by the admission gate retries every step).
  std::optional<Admission> admit(std::span<const int32_t> prompt, CacheHit* refused_hit = nullptr);

  // Ensures the sequence owns device pages for n_tokens_total tokens (prefill chunk or decode
  // growth), evicting unlocked entries per the eviction policy (demoting to host when a host tier
  // exists). false = no room even after eviction: nothing allocated, caller preempts (abort()s).
  bool reserve(SeqId seq, int64_t n_tokens_total);

  // The KDA states the forward pass computing tokens [begin, end) of this sequence must write, each
  // with the device checkpoint slot it goes to, allocated now (evicting unlocked entries as needed;
  // a position that finds no room is skipped and counted). Positions p: begin < p <= end,
  // page-aligned, ascending: the retention policy's (branch point, prompt end, interval, ...) and,
  // when the policy keeps the last decoded token (semantic), the last page boundary of the range in
  // the sequence's one decode-end slot (rewritten by every later step; finish() keeps the last).
  // The slots stay with the sequence until commit()/finish() (or are freed by abort()).
  std::vector<PlannedCheckpoint> plan_checkpoints(SeqId seq, int64_t begin, int64_t end);

  // After the forward pass computed tokens up to n_computed (prefill chunk or decode step):
  // inserts the newly full pages of `tokens` (all the sequence's tokens so far, size >= n_computed)
  // into the prefix tree and hands the planned checkpoints at positions <= n_computed to their
  // tree nodes (or frees them: see CommitReport). Never evicts, never logs transfers.
  CommitReport commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed);

  // Request done: commits the full pages of all_tokens (prompt + decoded; only the first
  // min(all_tokens.size(), reserved tokens) count as computed — pass exactly the computed tokens
  // when the last sampled token has no KV yet), adds the retention
  // policy's end-of-sequence checkpoint (semantic: the decode-end slot, if its position is the last
  // computed token rounded down to a page), then releases the sequence (unlock, free the live state,
  // unused planned slots and any page the tree did not adopt).
  void finish(SeqId seq, std::span<const int32_t> all_tokens);

  // Releases the sequence without inserting anything more (preemption / cancel). Pages and
  // checkpoints already committed stay cached.
  void abort(SeqId seq);

  // The copies decided since the last call, in order (see cache_transfer.h); clears the log. The
  // engine passes them to the executor with the step they were decided for.
  std::vector<CacheTransfer> take_transfers();

  // Device page ids backing the sequence's tokens [ceil(n_reserved / page_tokens)] (executor use).
  std::span<const int32_t> page_table(SeqId seq) const;
  int32_t live_slot(SeqId seq) const;  // device live-state slot of the sequence
  int64_t n_running() const;           // admitted, not yet finished/aborted sequences

  const CacheStats& stats() const;
  // Host memory used by the bookkeeping itself (tree nodes, key map, pools, queues), in bytes.
  int64_t bookkeeping_bytes() const;
  // Verifies pool, tree and tier invariants (refcounts match owners, no page owned twice, budgets,
  // checkpoint positions allowed by the policy, lock counts). Throws ds::Error on the first violation.
  // Cost O(everything cached): tests and debug only.
  void check_invariants() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<class CacheEmulation> emu_;  // cache_model "vllm" / "sglang": every call goes there
};

}  // namespace ds
