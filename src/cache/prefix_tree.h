// PrefixTree: radix tree over page-aligned token runs, one node per cached page (node at depth d
// covers tokens [(d-1)·P, d·P)); children are found through a map from chained page key to node,
// so match/insert cost O(pages touched). Nodes own one KV page (in one tier) and optionally one
// checkpoint (the KDA state at the node's end position), and keep their page's token ids, so a
// lookup verifies the tokens and a 64-bit key collision can never serve another prefix's page. Owns the
// structural invariants: keys map to their nodes, child counts, depths, and "device KV is prefix-closed" (a
// device node's parent is on the device). Locks, tiers and scores are fields the HybridCache maintains.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/page_key_map.h"

namespace ds {

enum class CheckpointReason : uint8_t { Block, Interval, PromptEnd, Branch, DecodeEnd };
const char* to_string(CheckpointReason reason);

struct TreeNode {
  uint64_t key = 0;        // chained page key of the prefix ending here
  int32_t parent = -1;     // -1: root or free node
  int32_t depth = 0;       // pages from the root (end position = depth · page_tokens)
  int32_t page = -1;       // KV page id in tier kv_tier's BlockPool
  int32_t ckpt_slot = -1;  // checkpoint slot in tier ckpt_tier's StatePool; -1 = none
  int8_t kv_tier = -1;     // 0 device, 1 host; -1 = free node
  int8_t ckpt_tier = -1;   // >= kv_tier when a checkpoint exists
  CheckpointReason ckpt_reason = CheckpointReason::Block;
  uint8_t held = 0;  // 1: on a path the eviction policy holds back from admissions (HybridCache)
  int32_t n_children = 0;
  int32_t n_device_children = 0;
  int32_t lock_count = 0;   // running sequences whose path contains this node
  uint32_t kv_version = 0;  // invalidates stale eviction-queue entries
  uint32_t ckpt_version = 0;
  uint32_t kv_access = 0;    // logical tick (admission count) of the last use of this page
  uint32_t ckpt_access = 0;  // logical tick of the last use (or creation) of the checkpoint
  float ckpt_value = 0;      // policy value of the checkpoint, fixed at creation (eviction)
  bool alive() const { return kv_tier >= 0; }
  bool has_checkpoint() const { return ckpt_slot >= 0; }
};
static_assert(sizeof(TreeNode) == 64, "one cache line per cached page");

class PrefixTree {
 public:
  static constexpr int32_t kRoot = 0;
  // page_tokens > 0: every node stores its page's token ids (add_child must be given them).
  explicit PrefixTree(int64_t page_tokens = 0);

  // Child of `parent` whose chained key is `key`, or -1.
  int32_t find_child(int32_t parent, uint64_t key) const;
  void prefetch(uint64_t key) const { by_key_.prefetch(key); }
  // New leaf under parent owning `page` in `tier`, storing `tokens` (page_tokens ids) when the tree
  // keeps tokens. -1 when the key is already taken (by any node): the page is not cached.
  int32_t add_child(int32_t parent, uint64_t key, int32_t page, int8_t tier,
                    std::span<const int32_t> tokens = {});
  // Whether `node` holds exactly these token ids (always true when the tree keeps no tokens).
  bool same_tokens(int32_t node, std::span<const int32_t> tokens) const;
  // Removes a childless, unlocked, checkpoint-free node (the caller freed its page).
  void remove_leaf(int32_t node);
  // Moves a node's KV between tiers, keeping parent child counts right.
  void set_kv_tier(int32_t node, int8_t tier);

  TreeNode& at(int32_t node) { return nodes_[node]; }
  const TreeNode& at(int32_t node) const { return nodes_[node]; }
  int64_t n_slots() const { return static_cast<int64_t>(nodes_.size()); }  // alive + free nodes
  int64_t n_nodes() const { return n_alive_; }                             // alive, root included
  int64_t memory_bytes() const;                                            // bookkeeping overhead

  // Structural invariants (keys, parents, child counts, depths, device prefix-closure).
  void check_invariants() const;

 private:
  int64_t page_tokens_ = 0;
  std::vector<TreeNode> nodes_;
  std::vector<int32_t> tokens_;  // [n_slots, page_tokens]: the page's token ids of each node
  std::vector<int32_t> free_;
  PageKeyMap by_key_;
  int64_t n_alive_ = 0;
};

}  // namespace ds
