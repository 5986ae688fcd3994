// Room making for HybridCache: picks the lowest-score unlocked unit of a tier (KV leaf or, where
// the policy allows, a checkpoint alone), demotes it to the host tier when there is one (device
// only) or drops it. Never touches locked nodes or the checkpoint being restored.
#include <algorithm>

#include "cache/hybrid_cache_impl.h"
#include "core/check.h"

namespace ds {

int64_t HybridCache::Impl::free_bytes(int tier) const {
  return cfg.tiers[tier].capacity_bytes - stats.tiers[tier].total_bytes();
}

void HybridCache::Impl::charge(int tier, ByteKind kind, int64_t delta_bytes) {
  TierStats& t = stats.tiers[tier];
  switch (kind) {
    case ByteKind::Kv:
      t.kv_bytes += delta_bytes;
      break;
    case ByteKind::Checkpoint:
      t.checkpoint_bytes += delta_bytes;
      break;
    case ByteKind::Live:
      t.live_bytes += delta_bytes;
      break;
  }
  t.peak_total_bytes = std::max(t.peak_total_bytes, t.total_bytes());
}

bool HybridCache::Impl::make_room(int tier, int64_t bytes) {
  if (bytes > cfg.tiers[tier].capacity_bytes) return false;
  while (free_bytes(tier) < bytes)
    if (!evict_one(tier)) return false;
  return true;
}

bool HybridCache::Impl::ckpt_units(int tier) const {
  // On the host tier a checkpoint can always leave alone: its page may have gone back to the device.
  return tier > 0 || eviction->evicts_checkpoints_alone();
}

bool HybridCache::Impl::kv_unit_valid(int tier, const EvictionEntry& e) const {
  const TreeNode& n = tree.at(e.node);
  if (!n.alive() || n.kv_tier != tier || n.kv_version != e.version || n.lock_count > 0) return false;
  return tier == 0 ? n.n_device_children == 0 : n.n_children == 0;
}

bool HybridCache::Impl::ckpt_unit_valid(int tier, const EvictionEntry& e) const {
  const TreeNode& n = tree.at(e.node);
  return n.alive() && n.has_checkpoint() && n.ckpt_tier == tier && n.ckpt_version == e.version &&
         e.node != pinned_ckpt;
}

double HybridCache::Impl::kv_score(int32_t node) const {
  const TreeNode& n = tree.at(node);
  if (!pending.empty()) {
    auto it = pending.find(node);
    if (it != pending.end()) return 0x1p34 - double(it->second);  // above every tick (< 2^32)
  }
  return eviction->kv_score(n.kv_access, n.has_checkpoint() ? n.ckpt_value : 0.0f);
}

void HybridCache::Impl::queue_kv(int32_t node) {
  if (node == PrefixTree::kRoot) return;
  TreeNode& n = tree.at(node);
  if (!n.alive() || n.lock_count > 0) return;
  const bool leaf = n.kv_tier == 0 ? n.n_device_children == 0 : n.n_children == 0;
  if (!leaf) return;
  ++n.kv_version;
  if (eviction->drops_stranded_first() && !n.has_checkpoint() && n.n_children == 0)
    stranded_queue[n.kv_tier].push({double(n.kv_access), node, n.kv_version});
  else
    kv_queue[n.kv_tier].push({kv_score(node), node, n.kv_version});
  maybe_compact(n.kv_tier);
}

void HybridCache::Impl::queue_ckpt(int32_t node) {
  TreeNode& n = tree.at(node);
  if (!n.has_checkpoint() || !ckpt_units(n.ckpt_tier)) return;
  ++n.ckpt_version;
  ckpt_queue[n.ckpt_tier].push(
      {eviction->checkpoint_score(n.ckpt_access, n.ckpt_value), node, n.ckpt_version});
  maybe_compact(n.ckpt_tier);
}

void HybridCache::Impl::maybe_compact(int tier) {
  const int64_t limit = 2 * tree.n_nodes() + 1024;
  if (kv_queue[tier].size() > limit)
    kv_queue[tier].compact([&](const EvictionEntry& e) { return kv_unit_valid(tier, e); });
  if (stranded_queue[tier].size() > limit)
    stranded_queue[tier].compact([&](const EvictionEntry& e) { return kv_unit_valid(tier, e); });
  if (ckpt_queue[tier].size() > limit)
    ckpt_queue[tier].compact([&](const EvictionEntry& e) { return ckpt_unit_valid(tier, e); });
}

bool HybridCache::Impl::evict_one(int tier) {
  for (;;) {
    EvictionQueue& kq = kv_queue[tier];
    EvictionQueue& cq = ckpt_queue[tier];
    while (!kq.empty() && !kv_unit_valid(tier, kq.top())) kq.pop();
    while (!cq.empty() && !ckpt_unit_valid(tier, cq.top())) cq.pop();
    const bool has_kv = !kq.empty();
    const bool has_ckpt = ckpt_units(tier) && !cq.empty();
    // A stranded leaf (no checkpoint at or below it: no hit can end in it) goes first, dropped.
    if (eviction->drops_stranded_first()) {
      EvictionQueue& sq = stranded_queue[tier];
      while (!sq.empty() && !(kv_unit_valid(tier, sq.top()) && !tree.at(sq.top().node).has_checkpoint() &&
                              tree.at(sq.top().node).n_children == 0))
        sq.pop();
      if (!sq.empty()) {
        const int32_t node = sq.top().node;
        sq.pop();
        drop_node(node);
        return true;
      }
    }
    if (!has_kv && !has_ckpt) return false;
    if (has_ckpt && (!has_kv || cq.top().score <= kq.top().score)) {
      const int32_t node = cq.top().node;
      cq.pop();
      evict_checkpoint(node);
      return true;
    }
    const int32_t node = kq.top().node;
    kq.pop();
    if (tier == 0 && n_tiers > 1) {
      if (demote_node(node)) return true;
      if (tree.at(node).n_children > 0) continue;  // host full of pinned data: try the next unit
    }
    drop_node(node);
    return true;
  }
}

// Device -> host: the page and (if on the device) its checkpoint move together.
bool HybridCache::Impl::demote_node(int32_t node) {
  const bool move_ckpt = tree.at(node).has_checkpoint() && tree.at(node).ckpt_tier == 0;
  const int64_t need = page_bytes + (move_ckpt ? ckpt_bytes : 0);
  if (free_bytes(1) < need && !make_room(1, need)) return false;
  const int32_t host_page = pages[1].allocate();
  if (host_page < 0) return false;
  int32_t host_slot = -1;
  if (move_ckpt && (host_slot = states[1].allocate_checkpoint()) < 0) {
    pages[1].unref(host_page);
    return false;
  }
  TreeNode& n = tree.at(node);
  transfers.push_back({TransferKind::Page, 0, 1, n.page, host_page});
  pages[0].unref(n.page);
  charge(0, ByteKind::Kv, -page_bytes);
  charge(1, ByteKind::Kv, page_bytes);
  n.page = host_page;
  tree.set_kv_tier(node, 1);
  ++stats.evictions[static_cast<int>(EvictReason::KvDemoted)];
  if (move_ckpt) {
    transfers.push_back({TransferKind::Checkpoint, 0, 1, n.ckpt_slot, host_slot});
    states[0].free_checkpoint(n.ckpt_slot);
    charge(0, ByteKind::Checkpoint, -ckpt_bytes);
    charge(1, ByteKind::Checkpoint, ckpt_bytes);
    n.ckpt_slot = host_slot;
    n.ckpt_tier = 1;
    queue_ckpt(node);
  }
  queue_kv(node);
  after_child_left(n.parent);
  return true;
}

void HybridCache::Impl::drop_node(int32_t node) {
  if (!pending.empty()) pending.erase(node);
  TreeNode& n = tree.at(node);
  if (n.has_checkpoint()) drop_checkpoint(node);
  const int tier = n.kv_tier;
  const int32_t parent = n.parent;
  pages[tier].unref(n.page);
  charge(tier, ByteKind::Kv, -page_bytes);
  tree.remove_leaf(node);
  ++stats.pages_dropped;
  ++stats.evictions[static_cast<int>(EvictReason::KvDropped)];
  after_child_left(parent);
}

void HybridCache::Impl::evict_checkpoint(int32_t node) {
  TreeNode& n = tree.at(node);
  if (n.ckpt_tier == 0 && n_tiers > 1 && (free_bytes(1) >= ckpt_bytes || make_room(1, ckpt_bytes))) {
    const int32_t slot = states[1].allocate_checkpoint();
    if (slot >= 0) {
      TreeNode& m = tree.at(node);
      transfers.push_back({TransferKind::Checkpoint, 0, 1, m.ckpt_slot, slot});
      states[0].free_checkpoint(m.ckpt_slot);
      charge(0, ByteKind::Checkpoint, -ckpt_bytes);
      charge(1, ByteKind::Checkpoint, ckpt_bytes);
      m.ckpt_slot = slot;
      m.ckpt_tier = 1;
      ++stats.evictions[static_cast<int>(EvictReason::CheckpointDemoted)];
      queue_ckpt(node);
      return;
    }
  }
  drop_checkpoint(node);
  ++stats.evictions[static_cast<int>(EvictReason::CheckpointDropped)];
  queue_kv(node);  // its KV-leaf score lost the checkpoint's value
}

void HybridCache::Impl::drop_checkpoint(int32_t node) {
  TreeNode& n = tree.at(node);
  states[n.ckpt_tier].free_checkpoint(n.ckpt_slot);
  charge(n.ckpt_tier, ByteKind::Checkpoint, -ckpt_bytes);
  n.ckpt_slot = -1;
  n.ckpt_tier = -1;
  n.ckpt_value = 0;
  ++n.ckpt_version;
  ++stats.checkpoints_dropped;
}

void HybridCache::Impl::after_child_left(int32_t parent) {
  queue_kv(parent);
}

}  // namespace ds
