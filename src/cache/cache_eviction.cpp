// Room making for HybridCache: picks the lowest-score unlocked unit of a tier (KV leaf or, where
// the policy allows, a checkpoint alone), demotes it to the host tier when there is one (device
// only) or drops it. Never touches locked nodes or the checkpoint being restored.
#include <algorithm>

#include "cache/hybrid_cache_impl.h"
#include "core/check.h"
#include "core/hash.h"

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

void HybridCache::Impl::account(int32_t node, int sign) {
  const TreeNode& n = tree.at(node);
  if (!n.alive()) return;
  if (n.lock_count == 0) reclaimable[n.kv_tier] += sign * page_bytes;
  if (n.has_checkpoint() && (n.lock_count == 0 || ckpt_units(n.ckpt_tier)))
    reclaimable[n.ckpt_tier] += sign * ckpt_bytes;
  if (n.held && n.lock_count == 0 && n.kv_tier == 0)
    reclaimable_held += sign * (page_bytes + (n.has_checkpoint() && n.ckpt_tier == 0 ? ckpt_bytes : 0));
}

void HybridCache::Impl::set_held(int32_t node, bool held) {
  if (tree.at(node).held == held) return;
  account(node, -1);
  tree.at(node).held = held;
  account(node, +1);
}

// Held leaves unused for longer than the reuse horizon (their sessions ended), and the oldest ones
// while the held bytes exceed their share of the device budget, go back to the ordinary order.
void HybridCache::Impl::expire_held() {
  EvictionQueue& hq = held_queue[0];
  const int64_t cap = static_cast<int64_t>(kHeldShare * double(cfg.tiers[0].capacity_bytes));
  for (;;) {
    while (!hq.empty() && !kv_unit_valid(0, hq.top())) hq.pop();
    if (hq.empty()) return;
    const int32_t node = hq.top().node;
    const uint32_t h = reuse.horizon();
    if (!(reclaimable_held > cap || (h > 0 && tick - tree.at(node).kv_access > h))) return;
    hq.pop();
    set_held(node, false);
    queue_kv(node);
  }
}

void HybridCache::Impl::lock(int32_t node) {
  account(node, -1);
  ++tree.at(node).lock_count;
  account(node, +1);
}

bool HybridCache::Impl::unlock(int32_t node) {
  account(node, -1);
  const bool now_free = --tree.at(node).lock_count == 0;
  account(node, +1);
  return now_free;
}

bool HybridCache::Impl::forks_mid_path() const {
  if (eviction->holds_paths() && overloaded()) return false;
  const uint32_t h = reuse.horizon();
  return tick - last_mid_fork <= (h > 0 ? h : 64u);
}

bool HybridCache::Impl::make_room(int tier, int64_t bytes) {
  if (bytes > cfg.tiers[tier].capacity_bytes) return false;
  if (tier == 0) expire_held();
  const int64_t held = tier == 0 && blocks_for_held() ? reclaimable_held : 0;
  if (free_bytes(tier) + reclaimable[tier] - held < bytes) {  // cannot succeed: evict nothing
    ++stats.room_refusals;
    return false;
  }
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
  if (eviction->drops_stranded_first() && !n.has_checkpoint() && n.n_children == 0) {
    stranded_queue[n.kv_tier].push({double(n.kv_access), node, n.kv_version});
  } else {
    (n.held ? held_queue : kv_queue)[n.kv_tier].push({kv_score(node), node, n.kv_version});
  }
  maybe_compact(n.kv_tier);
}

// At release: a sequence restored from a held path keeps its whole path held; another one's path
// joins the held set while the held bytes stay within their share of the device budget.
void HybridCache::Impl::hold_path(const CacheSeq& s) {
  if (s.path.empty()) return;
  int64_t add = 0;
  for (int32_t node : s.path) {
    const TreeNode& n = tree.at(node);
    if (!n.held && n.kv_tier == 0 && n.lock_count == 0)
      add += page_bytes + (n.has_checkpoint() && n.ckpt_tier == 0 ? ckpt_bytes : 0);
  }
  const bool fits =
      reclaimable_held + add <= static_cast<int64_t>(kHeldShare * double(cfg.tiers[0].capacity_bytes));
  if (!fits && !s.held) return;
  // Over the share, the member that just ran leaves the held set: it comes back last.
  for (int32_t node : s.path) {
    if (tree.at(node).held == fits) continue;
    set_held(node, fits);
    queue_kv(node);
  }
}

// A checkpoint unit of the superseded queue is still one: an unlocked node whose only child
// continues the path (a fork below would make the state the junction of two paths again).
bool HybridCache::Impl::superseded_valid(int tier, const EvictionEntry& e) const {
  const TreeNode& n = tree.at(e.node);
  return n.alive() && n.has_checkpoint() && n.ckpt_tier == tier && n.ckpt_version == e.version &&
         n.lock_count == 0 && n.n_children == 1 && e.node != pinned_ckpt;
}

// Walks the released sequence's path from its deepest node up: a checkpoint with a deeper
// checkpoint below it and no fork in between is superseded. O(path); called once per release.
void HybridCache::Impl::queue_superseded(const CacheSeq& s) {
  bool deeper = false;
  for (auto it = s.path.rbegin(); it != s.path.rend(); ++it) {
    const TreeNode& n = tree.at(*it);
    if (n.n_children > 1) deeper = false;
    if (!n.has_checkpoint()) continue;
    if (deeper && n.lock_count == 0 && n.n_children == 1)
      superseded_queue[n.ckpt_tier].push(
          {double(n.ckpt_access) - (n.ckpt_reason == CheckpointReason::Interval ? 0x1p33 : 0.0), *it,
           n.ckpt_version});
    deeper = true;
  }
  for (int t = 0; t < n_tiers; ++t)
    if (superseded_queue[t].size() > 2 * tree.n_nodes() + 1024)
      superseded_queue[t].compact([&](const EvictionEntry& e) { return superseded_valid(t, e); });
}

// At admission (gating policies): the deepest checkpointed point of the prompt, resident (the hit)
// or a ghost (dropped before it could be reused), gives one reuse-distance sample.
void HybridCache::Impl::observe_reuse(std::span<const int32_t> prompt, const TreeWalk& w) {
  int64_t best_depth = w.hit_pages;
  uint32_t last_use = w.hit_pages > 0 ? tree.at(w.path[w.hit_pages - 1]).kv_access : 0;
  const int64_t P = cfg.page_tokens;
  const int64_t max_pages = prompt.empty() ? 0 : (static_cast<int64_t>(prompt.size()) - 1) / P;
  uint64_t key = w.path.empty() ? kRootPageKey : tree.at(w.path.back()).key;
  for (int64_t i = w.hit_pages; i < max_pages; ++i) {
    if (i < static_cast<int64_t>(w.path.size()))
      key = tree.at(w.path[i]).key;
    else
      key = chain_key(key, page_hash(prompt.subspan(i * P, P)));
    if (auto g = reuse.take_ghost(key)) {
      best_depth = i + 1;
      last_use = *g;
    }
  }
  if (best_depth > 0) reuse.add_distance(tick - last_use);
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
  if (held_queue[tier].size() > limit)
    held_queue[tier].compact([&](const EvictionEntry& e) { return kv_unit_valid(tier, e); });
  if (ckpt_queue[tier].size() > limit)
    ckpt_queue[tier].compact([&](const EvictionEntry& e) { return ckpt_unit_valid(tier, e); });
}

bool HybridCache::Impl::evict_one(int tier) {
  for (;;) {
    EvictionQueue& kq = kv_queue[tier];
    if (tier == 0) expire_held();
    EvictionQueue& cq = ckpt_queue[tier];
    while (!kq.empty() && !kv_unit_valid(tier, kq.top())) kq.pop();
    while (!cq.empty() && !ckpt_unit_valid(tier, cq.top())) cq.pop();
    // Overloaded: held paths leave only for running requests' growth, after every other leaf.
    // Otherwise they are ordinary leaves (the older of the two queue heads leaves).
    EvictionQueue& hq = held_queue[tier];
    while (!hq.empty() && !kv_unit_valid(tier, hq.top())) hq.pop();
    const bool over = overloaded();
    const bool take_held =
        !hq.empty() && (kq.empty() ? !blocks_for_held() : !over && hq.top().score < kq.top().score);
    EvictionQueue& kq_or_held = take_held ? hq : kq;
    const bool has_kv = !kq_or_held.empty();
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
    // A superseded checkpoint next: every prompt that follows its path restores from a deeper one.
    // Under overload always (a held path keeps only its deepest state: each superseded one costs
    // as much as thousands of KV tokens of another path); otherwise only while more hits restore
    // from decode-end states than from prompt ends (a fork between two prompt ends restores from
    // the shallower one). A superseded tail state (Interval: insurance against a prompt that
    // leaves the path inside it) always may, and before the others.
    if (eviction->drops_superseded_checkpoints()) {
      EvictionQueue& q = superseded_queue[tier];
      while (!q.empty() && !superseded_valid(tier, q.top())) q.pop();
      if (!q.empty() && (overloaded() || (decode_end_hits > 0 && decode_end_hits >= prompt_end_hits) ||
                         tree.at(q.top().node).ckpt_reason == CheckpointReason::Interval)) {
        const int32_t node = q.top().node;
        q.pop();
        evict_checkpoint(node);
        return true;
      }
    }
    if (!has_kv && !has_ckpt) return false;
    if (has_ckpt && (!has_kv || cq.top().score <= kq_or_held.top().score)) {
      const int32_t node = cq.top().node;
      cq.pop();
      evict_checkpoint(node);
      return true;
    }
    const int32_t node = kq_or_held.top().node;
    kq_or_held.pop();
    if (eviction->holds_paths() && tier == n_tiers - 1 && tree.at(node).has_checkpoint()) {
      // Eviction age against the reuse horizon: a path younger than it is predicted live. Only
      // evictions that leave the cache count: a path demoted to the host tier still hits.
      const uint32_t h = reuse.horizon();
      const double live = h > 0 && tick - tree.at(node).kv_access <= h ? 1.0 : 0.0;
      live_evictions += (live - live_evictions) / 32.0;
    }
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
  account(node, -1);
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
  }
  account(node, +1);
  if (move_ckpt) queue_ckpt(node);
  queue_kv(node);
  after_child_left(n.parent);
  return true;
}

void HybridCache::Impl::drop_node(int32_t node) {
  if (!pending.empty()) pending.erase(node);
  if (tree.at(node).has_checkpoint()) drop_checkpoint(node);
  account(node, -1);
  TreeNode& n = tree.at(node);
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
      account(node, -1);
      TreeNode& m = tree.at(node);
      transfers.push_back({TransferKind::Checkpoint, 0, 1, m.ckpt_slot, slot});
      states[0].free_checkpoint(m.ckpt_slot);
      charge(0, ByteKind::Checkpoint, -ckpt_bytes);
      charge(1, ByteKind::Checkpoint, ckpt_bytes);
      m.ckpt_slot = slot;
      m.ckpt_tier = 1;
      account(node, +1);
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
  if (eviction->holds_paths()) reuse.add_ghost(n.key, n.kv_access);
  account(node, -1);
  states[n.ckpt_tier].free_checkpoint(n.ckpt_slot);
  charge(n.ckpt_tier, ByteKind::Checkpoint, -ckpt_bytes);
  n.ckpt_slot = -1;
  n.ckpt_tier = -1;
  n.ckpt_value = 0;
  ++n.ckpt_version;
  account(node, +1);
  ++stats.checkpoints_dropped;
}

void HybridCache::Impl::after_child_left(int32_t parent) {
  queue_kv(parent);
}

}  // namespace ds
