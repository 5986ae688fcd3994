#include "cache/prefix_tree.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

const char* to_string(CheckpointReason reason) {
  switch (reason) {
    case CheckpointReason::Block:
      return "block";
    case CheckpointReason::Interval:
      return "interval";
    case CheckpointReason::PromptEnd:
      return "prompt-end";
    case CheckpointReason::Branch:
      return "branch";
    case CheckpointReason::DecodeEnd:
      return "decode-end";
  }
  return "?";
}

PrefixTree::PrefixTree(int64_t page_tokens) : page_tokens_(page_tokens) {
  DS_CHECK(page_tokens >= 0, "PrefixTree: page_tokens {} < 0", page_tokens);
  TreeNode root;
  root.key = kRootPageKey;
  root.kv_tier = 0;
  nodes_.push_back(root);
  n_alive_ = 1;
}

int32_t PrefixTree::find_child(int32_t parent, uint64_t key) const {
  const int32_t node = by_key_.find(key);
  return node >= 0 && nodes_[node].parent == parent ? node : -1;
}

int32_t PrefixTree::add_child(int32_t parent, uint64_t key, int32_t page, int8_t tier,
                              std::span<const int32_t> tokens) {
  DS_CHECK(parent >= 0 && parent < n_slots() && nodes_[parent].alive(), "PrefixTree: parent {} is not a node",
           parent);
  DS_CHECK(tier == 0 || tier == 1, "PrefixTree: bad tier {}", tier);
  DS_CHECK(tier >= nodes_[parent].kv_tier, "PrefixTree: device child under host parent {}", parent);
  DS_CHECK(static_cast<int64_t>(tokens.size()) == page_tokens_, "PrefixTree: {} token ids for a page of {}",
           tokens.size(), page_tokens_);
  if (key == 0 || by_key_.find(key) >= 0) return -1;  // collision with another prefix: do not cache
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  TreeNode& n = nodes_[id];
  const uint32_t kv_version = n.kv_version + 1, ckpt_version = n.ckpt_version + 1;
  n = TreeNode{};
  n.key = key;
  n.parent = parent;
  n.depth = nodes_[parent].depth + 1;
  n.page = page;
  n.kv_tier = tier;
  n.kv_version = kv_version;
  n.ckpt_version = ckpt_version;
  if (page_tokens_ > 0) {
    tokens_.resize(nodes_.size() * static_cast<size_t>(page_tokens_));
    std::copy(tokens.begin(), tokens.end(), tokens_.begin() + id * page_tokens_);
  }
  by_key_.insert(key, id);
  ++nodes_[parent].n_children;
  if (tier == 0) ++nodes_[parent].n_device_children;
  ++n_alive_;
  return id;
}

bool PrefixTree::same_tokens(int32_t node, std::span<const int32_t> tokens) const {
  if (page_tokens_ == 0) return true;
  return static_cast<int64_t>(tokens.size()) == page_tokens_ &&
         std::equal(tokens.begin(), tokens.end(), tokens_.begin() + node * page_tokens_);
}

void PrefixTree::remove_leaf(int32_t node) {
  DS_CHECK(node > 0 && node < n_slots() && nodes_[node].alive(), "PrefixTree: remove of non-node {}", node);
  TreeNode& n = nodes_[node];
  DS_CHECK(n.n_children == 0 && n.lock_count == 0 && !n.has_checkpoint(),
           "PrefixTree: node {} not removable (children {}, locks {}, checkpoint {})", node, n.n_children,
           n.lock_count, n.ckpt_slot);
  TreeNode& p = nodes_[n.parent];
  --p.n_children;
  if (n.kv_tier == 0) --p.n_device_children;
  by_key_.erase(n.key);
  n.kv_tier = -1;
  n.parent = -1;
  n.page = -1;
  ++n.kv_version;
  ++n.ckpt_version;
  free_.push_back(node);
  --n_alive_;
}

void PrefixTree::set_kv_tier(int32_t node, int8_t tier) {
  TreeNode& n = nodes_[node];
  DS_CHECK(node > 0 && n.alive() && (tier == 0 || tier == 1), "PrefixTree: bad tier move of node {}", node);
  if (n.kv_tier == tier) return;
  TreeNode& p = nodes_[n.parent];
  if (n.kv_tier == 0) --p.n_device_children;
  if (tier == 0) ++p.n_device_children;
  n.kv_tier = tier;
  ++n.kv_version;
}

int64_t PrefixTree::memory_bytes() const {
  return static_cast<int64_t>(nodes_.capacity() * sizeof(TreeNode) + free_.capacity() * sizeof(int32_t) +
                              tokens_.capacity() * sizeof(int32_t)) +
         by_key_.memory_bytes();
}

void PrefixTree::check_invariants() const {
  std::vector<int32_t> children(nodes_.size(), 0), dev_children(nodes_.size(), 0);
  int64_t alive = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const TreeNode& n = nodes_[i];
    if (!n.alive()) continue;
    ++alive;
    if (i == kRoot) continue;
    DS_CHECK(n.parent >= 0 && n.parent < n_slots() && nodes_[n.parent].alive(),
             "PrefixTree: node {} has dead parent {}", i, n.parent);
    const TreeNode& p = nodes_[n.parent];
    DS_CHECK(n.depth == p.depth + 1, "PrefixTree: node {} depth {} under parent depth {}", i, n.depth,
             p.depth);
    DS_CHECK(n.kv_tier >= p.kv_tier, "PrefixTree: node {} on device under host parent {}", i, n.parent);
    DS_CHECK(!n.has_checkpoint() || n.ckpt_tier >= n.kv_tier,
             "PrefixTree: node {} checkpoint tier {} < KV tier {}", i, n.ckpt_tier, n.kv_tier);
    DS_CHECK(n.lock_count >= 0 && (n.parent == kRoot || n.lock_count <= p.lock_count),
             "PrefixTree: node {} locked {} times, parent only {}", i, n.lock_count, p.lock_count);
    DS_CHECK(by_key_.find(n.key) == static_cast<int32_t>(i), "PrefixTree: key of node {} not mapped", i);
    ++children[n.parent];
    if (n.kv_tier == 0) ++dev_children[n.parent];
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].alive()) continue;
    DS_CHECK(children[i] == nodes_[i].n_children && dev_children[i] == nodes_[i].n_device_children,
             "PrefixTree: node {} child counts {}/{} but counted {}/{}", i, nodes_[i].n_children,
             nodes_[i].n_device_children, children[i], dev_children[i]);
  }
  DS_CHECK(alive == n_alive_ && by_key_.size() == alive - 1,
           "PrefixTree: {} alive nodes, counter {}, {} keys", alive, n_alive_, by_key_.size());
}

}  // namespace ds
