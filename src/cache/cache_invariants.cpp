// HybridCache::check_invariants: recomputes every owner count from scratch and compares it with the
// pools, the tree and the tier byte counters. O(everything cached); tests and debug only.
#include <unordered_set>

#include "cache/hybrid_cache_impl.h"
#include "core/check.h"

namespace ds {

void HybridCache::Impl::check_invariants() const {
  tree.check_invariants();
  for (int t = 0; t < n_tiers; ++t) {
    pages[t].check_invariants();
    states[t].check_invariants();
  }
  // Page owners: tree nodes (one each) + sequences (device only).
  std::vector<std::vector<int32_t>> owners(n_tiers);
  for (int t = 0; t < n_tiers; ++t) owners[t].assign(pages[t].n_ids(), 0);
  std::vector<std::vector<uint8_t>> ckpt_owner(n_tiers);
  for (int t = 0; t < n_tiers; ++t)
    ckpt_owner[t].assign(static_cast<size_t>(states[t].n_checkpoints()) * 2 + 64, 0);
  std::vector<int32_t> locks(tree.n_slots(), 0);
  std::array<int64_t, kMaxTiers> n_ckpt{};
  for (int32_t i = 1; i < tree.n_slots(); ++i) {
    const TreeNode& n = tree.at(i);
    if (!n.alive()) continue;
    DS_CHECK(n.kv_tier < n_tiers && n.page >= 0 && n.page < pages[n.kv_tier].n_ids(),
             "cache: node {} has page {} outside tier {}", i, n.page, n.kv_tier);
    ++owners[n.kv_tier][n.page];
    if (!n.has_checkpoint()) continue;
    const int t = n.ckpt_tier;
    DS_CHECK(t >= 0 && t < n_tiers && states[t].checkpoint_in_use(n.ckpt_slot),
             "cache: node {} checkpoint slot {} (tier {}) is not allocated", i, n.ckpt_slot, t);
    if (static_cast<size_t>(n.ckpt_slot) >= ckpt_owner[t].size()) ckpt_owner[t].resize(n.ckpt_slot + 1, 0);
    DS_CHECK(!ckpt_owner[t][n.ckpt_slot], "cache: checkpoint slot {} (tier {}) owned twice", n.ckpt_slot, t);
    ckpt_owner[t][n.ckpt_slot] = 1;
    ++n_ckpt[t];
    const int64_t pos = static_cast<int64_t>(n.depth) * cfg.page_tokens;
    DS_CHECK(retention->allows(n.ckpt_reason, pos),
             "cache: checkpoint at {} tokens ({}) not allowed by retention {}", pos, to_string(n.ckpt_reason),
             retention->name());
  }
  std::unordered_set<int32_t> live;
  for (const auto& entry : seqs) {
    const auto& id = entry.first;  // named copies: clang 14 cannot capture structured bindings
    const auto& s = entry.second;
    // Planned checkpoint slots belong to their sequence until commit.
    auto own_planned = [&](int32_t slot, int64_t position) {
      DS_CHECK(states[0].checkpoint_in_use(slot), "cache: sequence {} planned slot {} is not allocated", id,
               slot);
      if (static_cast<size_t>(slot) >= ckpt_owner[0].size()) ckpt_owner[0].resize(slot + 1, 0);
      DS_CHECK(!ckpt_owner[0][slot], "cache: checkpoint slot {} (tier 0) owned twice", slot);
      DS_CHECK(position > 0 && position % cfg.page_tokens == 0 && position <= s.reserved_tokens,
               "cache: sequence {} planned checkpoint at {} tokens (reserved {})", id, position,
               s.reserved_tokens);
      ckpt_owner[0][slot] = 1;
      ++n_ckpt[0];
    };
    for (const PendingCheckpoint& c : s.pending) own_planned(c.slot, c.position);
    if (s.decode_end.slot >= 0) own_planned(s.decode_end.slot, s.decode_end.position);
    DS_CHECK(states[0].live_in_use(s.live_slot) && live.insert(s.live_slot).second,
             "cache: sequence {} live slot {} not allocated or shared", id, s.live_slot);
    DS_CHECK(static_cast<int64_t>(s.pages.size()) * cfg.page_tokens >= s.reserved_tokens &&
                 s.path.size() <= s.pages.size(),
             "cache: sequence {} has {} pages for {} reserved tokens, path {}", id, s.pages.size(),
             s.reserved_tokens, s.path.size());
    for (int32_t p : s.pages) {
      DS_CHECK(p >= 0 && p < pages[0].n_ids(), "cache: sequence {} page {} out of range", id, p);
      ++owners[0][p];
    }
    for (size_t i = 0; i < s.path.size(); ++i) {
      const TreeNode& n = tree.at(s.path[i]);
      DS_CHECK(n.alive() && n.kv_tier == 0 && n.depth == static_cast<int32_t>(i + 1),
               "cache: sequence {} path[{}] = node {} is not a device node at depth {}", id, i, s.path[i],
               i + 1);
      DS_CHECK(i == 0 ? n.parent == PrefixTree::kRoot : n.parent == s.path[i - 1],
               "cache: sequence {} path breaks at page {}", id, i);
      ++locks[s.path[i]];
    }
  }
  for (int t = 0; t < n_tiers; ++t)
    for (int32_t p = 0; p < pages[t].n_ids(); ++p)
      DS_CHECK(owners[t][p] == pages[t].refcount(p), "cache: tier {} page {} has refcount {} but {} owners",
               t, p, pages[t].refcount(p), owners[t][p]);
  for (int32_t i = 1; i < tree.n_slots(); ++i)
    if (tree.at(i).alive())
      DS_CHECK(locks[i] == tree.at(i).lock_count, "cache: node {} lock_count {} but {} sequences hold it", i,
               tree.at(i).lock_count, locks[i]);
  for (int t = 0; t < n_tiers; ++t) {
    const TierStats& ts = stats.tiers[t];
    DS_CHECK(n_ckpt[t] == states[t].n_checkpoints(),
             "cache: tier {} has {} checkpoint slots but {} on nodes and planned", t,
             states[t].n_checkpoints(), n_ckpt[t]);
    DS_CHECK(ts.kv_bytes == pages[t].n_used() * page_bytes, "cache: tier {} kv_bytes {} != {} pages x {}", t,
             ts.kv_bytes, pages[t].n_used(), page_bytes);
    DS_CHECK(ts.checkpoint_bytes == states[t].n_checkpoints() * ckpt_bytes,
             "cache: tier {} checkpoint_bytes {} != {} slots x {}", t, ts.checkpoint_bytes,
             states[t].n_checkpoints(), ckpt_bytes);
    DS_CHECK(ts.live_bytes == states[t].n_live() * live_bytes,
             "cache: tier {} live_bytes {} != {} slots x {}", t, ts.live_bytes, states[t].n_live(),
             live_bytes);
    DS_CHECK(ts.total_bytes() <= cfg.tiers[t].capacity_bytes,
             "cache: tier {} ({}) holds {} bytes > capacity {}", t, cfg.tiers[t].name, ts.total_bytes(),
             cfg.tiers[t].capacity_bytes);
  }
  DS_CHECK(static_cast<int64_t>(seqs.size()) == states[0].n_live(), "cache: {} sequences but {} live slots",
           seqs.size(), states[0].n_live());
  std::array<int64_t, kMaxTiers> reclaim{};
  int64_t held = 0;
  for (int32_t i = 1; i < tree.n_slots(); ++i) {
    const TreeNode& n = tree.at(i);
    if (!n.alive()) continue;
    DS_CHECK(!n.held || eviction->holds_paths(), "cache: node {} held under eviction {}", i,
             eviction->name());
    if (n.held && n.lock_count == 0 && n.kv_tier == 0)
      held += page_bytes + (n.has_checkpoint() && n.ckpt_tier == 0 ? ckpt_bytes : 0);
    if (n.lock_count == 0) reclaim[n.kv_tier] += page_bytes;
    if (n.has_checkpoint() && (n.lock_count == 0 || ckpt_units(n.ckpt_tier)))
      reclaim[n.ckpt_tier] += ckpt_bytes;
  }
  for (int t = 0; t < n_tiers; ++t)
    DS_CHECK(reclaim[t] == reclaimable[t], "cache: tier {} reclaimable bytes {} but unlocked entries hold {}",
             t, reclaimable[t], reclaim[t]);
  DS_CHECK(held == reclaimable_held, "cache: held reclaimable bytes {} but unlocked held nodes hold {}",
           reclaimable_held, held);
}

}  // namespace ds
