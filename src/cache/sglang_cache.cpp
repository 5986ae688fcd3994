#include "cache/sglang_cache.h"

#include <algorithm>
#include <cstdint>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

SglangCache::SglangCache(const CacheConfig& config) : cfg_(config) {
  const SglangCacheConfig& g = cfg_.sglang;
  DS_CHECK(g.kv_pages > 0 && g.kv_pages < (int64_t{1} << 30),
           "sglang cache: kv_pages must be in [1, 2^30), got {}", g.kv_pages);
  DS_CHECK(g.state_slots >= kSlotsPerRequest && g.state_slots < (int64_t{1} << 30),
           "sglang cache: state_slots must be in [{}, 2^30), got {}", kSlotsPerRequest, g.state_slots);
  DS_CHECK(g.slots_per_request == kSlotsPerRequest,
           "sglang cache: slots_per_request {} unsupported (extra_buffer holds {})", g.slots_per_request,
           kSlotsPerRequest);
  DS_CHECK(g.track_interval > 0 && g.track_interval % cfg_.page_tokens == 0,
           "sglang cache: track_interval {} must be a positive multiple of the page size {}",
           g.track_interval, cfg_.page_tokens);
  DS_CHECK(g.track_chunk > 0 && g.track_chunk % cfg_.page_tokens == 0,
           "sglang cache: track_chunk {} must be a positive multiple of the page size {}", g.track_chunk,
           cfg_.page_tokens);
  DS_CHECK(g.page_bytes > 0 && g.state_bytes > 0, "sglang cache: bad page_bytes {} / state_bytes {}",
           g.page_bytes, g.state_bytes);
  DS_CHECK(cfg_.tiers.size() == 1,
           "sglang cache: no host tier (HiMambaRadixCache is not emulated), got {} tiers", cfg_.tiers.size());
  nodes_.emplace_back();  // the root: never evicted, never locked in the counters
  for (int64_t p = g.kv_pages - 1; p >= 0; --p) free_pages_.push_back(int32_t(p));
  for (int64_t s = g.state_slots - 1; s >= 0; --s) free_slots_.push_back(int32_t(s));
}

// ---- tree bookkeeping ------------------------------------------------------------------------

// Every change of a node's times or index conditions goes unindex -> change -> reindex.
void SglangCache::unindex(int32_t n) {
  Node& x = nodes_[size_t(n)];
  if (x.in_leaves) leaves_.erase({x.kv_time, n});
  if (x.in_states) states_.erase({x.state_time, n});
  x.in_leaves = x.in_states = false;
}

void SglangCache::reindex(int32_t n) {
  unindex(n);
  if (n == 0) return;
  Node& x = nodes_[size_t(n)];
  if (x.n_children == 0 && x.full_lock == 0) x.in_leaves = leaves_.insert({x.kv_time, n}).second;
  if (x.state >= 0 && x.state_lock == 0) x.in_states = states_.insert({x.state_time, n}).second;
}

void SglangCache::lock(Seq& s, int32_t n) {
  s.last_node = n;
  s.state_locked = n != 0 && nodes_[size_t(n)].state >= 0;
  if (s.state_locked) {
    ++nodes_[size_t(n)].state_lock;
    reindex(n);
  }
  for (int32_t x = n; x != 0; x = nodes_[size_t(x)].parent) {
    if (nodes_[size_t(x)].full_lock++ == 0) --evictable_pages_;
    reindex(x);
  }
}

void SglangCache::unlock(Seq& s) {
  const int32_t n = s.last_node;
  if (s.state_locked) --nodes_[size_t(n)].state_lock;
  for (int32_t x = n; x != 0; x = nodes_[size_t(x)].parent) {
    DS_CHECK(nodes_[size_t(x)].full_lock > 0, "sglang cache: unlock of an unlocked node {}", x);
    if (--nodes_[size_t(x)].full_lock == 0) ++evictable_pages_;
    reindex(x);
  }
  if (n != 0) reindex(n);
  s.last_node = 0;
  s.state_locked = false;
}

int32_t SglangCache::new_node(uint64_t key, int32_t parent, int32_t page) {
  int32_t n;
  if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_[size_t(n)] = Node{};
  } else {
    n = int32_t(nodes_.size());
    nodes_.emplace_back();
  }
  Node& x = nodes_[size_t(n)];
  x.key = key;
  x.parent = parent;
  x.page = page;
  x.depth = nodes_[size_t(parent)].depth + 1;
  x.kv_time = ++tick_;
  ++nodes_[size_t(parent)].n_children;
  reindex(parent);
  map_[key] = n;
  ++tree_pages_;
  ++evictable_pages_;
  ++stats_.pages_inserted;
  reindex(n);
  return n;
}

void SglangCache::delete_node(int32_t n) {
  Node& x = nodes_[size_t(n)];
  DS_CHECK(n != 0 && x.n_children == 0 && x.full_lock == 0 && x.state_lock == 0,
           "sglang cache: deleting node {} that is not an unlocked leaf", n);
  unindex(n);
  if (x.state >= 0) {
    free_slot(x.state);
    --tree_states_;
    ++stats_.checkpoints_dropped;
    ++stats_.evictions[size_t(EvictReason::KvDropped)];
  }
  free_pages_.push_back(x.page);
  --tree_pages_;
  --evictable_pages_;
  ++stats_.pages_dropped;
  map_.erase(x.key);
  const int32_t p = x.parent;
  --nodes_[size_t(p)].n_children;
  reindex(p);
  x = Node{};
  free_nodes_.push_back(n);
}

// Evicts a leaf (KV and state), then the tombstone ancestors it leaves as unlocked leaves.
void SglangCache::evict_leaf(int32_t n) {
  int32_t p = nodes_[size_t(n)].parent;
  delete_node(n);
  while (p != 0) {
    const Node& x = nodes_[size_t(p)];
    if (x.state >= 0 || x.n_children > 0 || x.full_lock > 0) break;
    const int32_t up = x.parent;
    delete_node(p);
    p = up;
  }
}

bool SglangCache::evict_pages(int64_t n_pages) {
  while (int64_t(free_pages_.size()) < n_pages) {
    if (leaves_.empty()) return false;
    evict_leaf(leaves_.begin()->second);
  }
  return true;
}

bool SglangCache::evict_state() {
  if (states_.empty()) return false;
  const int32_t n = states_.begin()->second;
  Node& x = nodes_[size_t(n)];
  if (x.n_children == 0 && x.full_lock == 0) {
    evict_leaf(n);
    return true;
  }
  unindex(n);
  free_slot(x.state);
  x.state = -1;
  --tree_states_;
  ++stats_.checkpoints_dropped;
  ++stats_.evictions[size_t(EvictReason::CheckpointDropped)];
  reindex(n);
  return true;
}

int32_t SglangCache::alloc_page() {
  DS_CHECK(!free_pages_.empty(), "sglang cache: no free page");
  const int32_t p = free_pages_.back();
  free_pages_.pop_back();
  return p;
}

int32_t SglangCache::alloc_slot() {
  while (free_slots_.empty())
    if (!evict_state()) return -1;
  const int32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void SglangCache::free_slot(int32_t s) {
  free_slots_.push_back(s);
}

void SglangCache::update_bytes() {
  const SglangCacheConfig& g = cfg_.sglang;
  TierStats& t = stats_.tiers[0];
  t.kv_bytes = (g.kv_pages - int64_t(free_pages_.size())) * g.page_bytes;
  t.checkpoint_bytes = tree_states_ * g.state_bytes;
  t.live_bytes = (g.state_slots - int64_t(free_slots_.size()) - tree_states_) * g.state_bytes;
  t.peak_total_bytes = std::max(t.peak_total_bytes, t.total_bytes());
}

// ---- lookup ----------------------------------------------------------------------------------

void SglangCache::walk(std::span<const int32_t> prompt, int64_t max_pages, Walk& w) const {
  const int64_t B = cfg_.page_tokens;
  const int64_t nb = std::min<int64_t>(max_pages, prompt.empty() ? 0 : int64_t(prompt.size() - 1) / B);
  w.keys.clear();
  w.nodes.clear();
  w.hit_node = 0;
  uint64_t k = kRootPageKey;
  for (int64_t i = 0; i < nb; ++i) {  // keys are chained: hash only as far as the tree matches
    k = chain_key(k, hash_page(prompt.subspan(size_t(i * B), size_t(B))));
    w.keys.push_back(k);
    auto it = map_.find(k);
    if (it == map_.end()) break;
    w.nodes.push_back(it->second);
    if (nodes_[size_t(it->second)].state >= 0) w.hit_node = it->second;
  }
}

CacheHit SglangCache::match(std::span<const int32_t> prompt) const {
  Walk w;
  walk(prompt, INT64_MAX, w);
  CacheHit h;
  const int64_t B = cfg_.page_tokens;
  h.n_hit_tokens = h.n_hit_device_tokens = int64_t(nodes_[size_t(w.hit_node)].depth) * B;
  h.n_kv_tokens = int64_t(w.nodes.size()) * B;
  h.n_lost_tokens = h.n_kv_tokens - h.n_hit_tokens;
  return h;
}

// ---- sequences -------------------------------------------------------------------------------

std::optional<Admission> SglangCache::admit(std::span<const int32_t> prompt) {
  Walk w;
  walk(prompt, INT64_MAX, w);
  const int64_t B = cfg_.page_tokens;
  CacheHit hit;
  hit.n_hit_tokens = hit.n_hit_device_tokens = int64_t(nodes_[size_t(w.hit_node)].depth) * B;
  hit.n_kv_tokens = int64_t(w.nodes.size()) * B;
  hit.n_lost_tokens = hit.n_kv_tokens - hit.n_hit_tokens;
  const SeqId id = next_seq_;
  Seq s;
  s.prompt_tokens = int64_t(prompt.size());
  lock(s, w.hit_node);
  const int64_t d = nodes_[size_t(w.hit_node)].depth;
  const int64_t need_pages = (s.prompt_tokens + B - 1) / B - d;
  // Free + evictable state slots: the unlocked states (each frees one slot).
  const int64_t slots_avail = int64_t(free_slots_.size()) + int64_t(states_.size());
  if (int64_t(free_pages_.size()) + evictable_pages_ < need_pages || slots_avail < kSlotsPerRequest) {
    unlock(s);
    ++stats_.failed_admissions;
    return std::nullopt;
  }
  next_seq_++;
  s.work = alloc_slot();
  s.track[0] = alloc_slot();
  s.track[1] = alloc_slot();
  DS_CHECK(s.work >= 0 && s.track[1] >= 0, "sglang cache: slot accounting broken at admission");
  // Refresh: the hit path's KV, the hit node last (most recent), and only the consumed state.
  std::vector<int32_t> path;
  for (int32_t x = w.hit_node; x != 0; x = nodes_[size_t(x)].parent) path.push_back(x);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    unindex(*it);
    nodes_[size_t(*it)].kv_time = ++tick_;
    reindex(*it);
  }
  Admission adm{id, hit, {}};
  if (w.hit_node != 0) {
    unindex(w.hit_node);
    Node& h = nodes_[size_t(w.hit_node)];
    h.state_time = ++tick_;
    reindex(w.hit_node);
    adm.restore_from = CheckpointRef{0, h.state};
    transfers_.push_back({TransferKind::Restore, 0, 0, h.state, s.work});
    ++stats_.checkpoints_used;
  }
  for (int64_t i = 0; i < d; ++i) s.pages.push_back(nodes_[size_t(w.nodes[size_t(i)])].page);
  s.cached_pages = d;
  seqs_.emplace(id, std::move(s));
  CacheStats& st = stats_;
  ++st.n_admissions;
  st.prompt_tokens += int64_t(prompt.size());
  st.hit_tokens += hit.n_hit_tokens;
  st.kv_reachable_tokens += hit.n_kv_tokens;
  st.lost_tokens += hit.n_lost_tokens;
  st.miss_tokens += int64_t(prompt.size()) - hit.n_hit_tokens;
  st.tiers[0].hit_tokens += hit.n_hit_tokens;
  update_bytes();
  return adm;
}

bool SglangCache::reserve(SeqId seq, int64_t n_tokens_total) {
  Seq& s = seqs_.at(seq);
  const int64_t want = (n_tokens_total + cfg_.page_tokens - 1) / cfg_.page_tokens;
  const int64_t n_new = want - int64_t(s.pages.size());
  if (n_new <= 0) return true;
  if (!evict_pages(n_new)) {
    ++stats_.failed_reserves;
    return false;
  }
  for (int64_t i = 0; i < n_new; ++i) s.pages.push_back(alloc_page());
  update_bytes();
  return true;
}

std::vector<PlannedCheckpoint> SglangCache::plan_checkpoints(SeqId seq, int64_t begin, int64_t end) {
  Seq& s = seqs_.at(seq);
  const SglangCacheConfig& g = cfg_.sglang;
  int64_t pos = 0;
  if (begin < s.prompt_tokens) {  // extend: the deepest chunk-aligned position strictly inside it
    const int64_t c = (end - begin - 1) / g.track_chunk;
    if (c >= 1) pos = begin + c * g.track_chunk;
  } else if (end / g.track_interval * g.track_interval >
             begin) {  // decode: length a multiple of the interval
    pos = end / g.track_interval * g.track_interval;
  }
  pos = pos / cfg_.page_tokens * cfg_.page_tokens;
  const int32_t slot = s.track[size_t(s.next_track)];
  if (pos <= begin || slot < 0) return {};
  s.pending_track = pos;
  return {PlannedCheckpoint{pos, slot}};
}

void SglangCache::resolve_track(Seq& s, int64_t n_computed) {
  if (s.pending_track > 0 && s.pending_track <= n_computed) {
    s.last_track = s.pending_track;
    s.next_track ^= 1;
    s.pending_track = 0;
  }
}

bool SglangCache::insert(Seq& s, std::span<const int32_t> tokens, int64_t n_pages, CommitReport& rep) {
  const int64_t B = cfg_.page_tokens;
  uint64_t k = kRootPageKey;
  int32_t node = 0;
  for (int64_t i = 0; i < n_pages; ++i) {
    k = chain_key(k, hash_page(tokens.subspan(size_t(i * B), size_t(B))));
    auto it = map_.find(k);
    if (it != map_.end()) {
      node = it->second;
      unindex(node);
      Node& x = nodes_[size_t(node)];
      x.kv_time = ++tick_;
      if (x.state >= 0) x.state_time = tick_;
      reindex(node);
      if (i >= s.cached_pages && s.pages[size_t(i)] != x.page) {  // a duplicate: the tree's page serves
        free_pages_.push_back(s.pages[size_t(i)]);
        s.pages[size_t(i)] = x.page;
      }
    } else {
      DS_CHECK(i >= s.cached_pages, "sglang cache: tree page {} of a running sequence is gone", i);
      node = new_node(k, node, s.pages[size_t(i)]);
      ++rep.n_pages_inserted;
    }
  }
  s.cached_pages = std::max(s.cached_pages, n_pages);
  bool took = false;
  const int slot_i = s.next_track ^ 1;  // the buffer written last
  if (node != 0 && nodes_[size_t(node)].state < 0) {
    unindex(node);
    Node& x = nodes_[size_t(node)];
    x.state = s.track[size_t(slot_i)];
    x.state_time = ++tick_;
    s.track[size_t(slot_i)] = -1;
    ++tree_states_;
    ++stats_.checkpoints_created;
    reindex(node);
    took = true;
    rep.kept.push_back(n_pages * B);
  } else {
    ++stats_.checkpoints_duplicate;
    rep.dropped.push_back(n_pages * B);
  }
  unlock(s);
  lock(s, node);
  return took;
}

CommitReport SglangCache::commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed) {
  Seq& s = seqs_.at(seq);
  CommitReport rep;
  resolve_track(s, n_computed);
  // cache_unfinished_req: a non-final prefill chunk publishes its tracked state; a fresh slot
  // replaces the donated ping-pong buffer.
  if (n_computed < s.prompt_tokens && s.last_track > 0) {
    const int64_t n_pages = s.last_track / cfg_.page_tokens;
    const int slot_i = s.next_track ^ 1;
    if (insert(s, tokens, n_pages, rep)) s.track[size_t(slot_i)] = alloc_slot();
    s.last_track = 0;
    if (s.track[size_t(slot_i)] < 0) ++stats_.checkpoints_skipped;  // no slot: later tracking skips it
  }
  update_bytes();
  return rep;
}

void SglangCache::release(SeqId id) {
  Seq& s = seqs_.at(id);
  for (size_t i = size_t(s.cached_pages); i < s.pages.size(); ++i) free_pages_.push_back(s.pages[i]);
  if (s.work >= 0) free_slot(s.work);
  for (int32_t t : s.track)
    if (t >= 0) free_slot(t);
  unlock(s);
  seqs_.erase(id);
  update_bytes();
}

void SglangCache::finish(SeqId seq, std::span<const int32_t> all_tokens) {
  Seq& s = seqs_.at(seq);
  const int64_t n = std::min<int64_t>(int64_t(all_tokens.size()), int64_t(s.pages.size()) * cfg_.page_tokens);
  resolve_track(s, n);
  // cache_finished_req: KV up to the last tracked position and the tracked state enter the tree; the
  // rest of the KV is freed.
  if (s.last_track > 0 && s.last_track <= n && s.track[size_t(s.next_track ^ 1)] >= 0) {
    CommitReport rep;
    insert(s, all_tokens, s.last_track / cfg_.page_tokens, rep);
  }
  release(seq);
}

void SglangCache::abort(SeqId seq) {
  release(seq);
}

std::vector<CacheTransfer> SglangCache::take_transfers() {
  std::vector<CacheTransfer> t = std::move(transfers_);
  transfers_.clear();
  return t;
}

std::span<const int32_t> SglangCache::page_table(SeqId seq) const {
  return seqs_.at(seq).pages;
}

int32_t SglangCache::live_slot(SeqId seq) const {
  return seqs_.at(seq).work;
}

int64_t SglangCache::bookkeeping_bytes() const {
  int64_t b = int64_t(nodes_.size() * sizeof(Node)) + int64_t(map_.size()) * 32 +
              int64_t(leaves_.size() + states_.size()) * 48 +
              int64_t(free_pages_.size() + free_slots_.size()) * 4;
  for (const auto& [id, s] : seqs_) b += int64_t(s.pages.size()) * 4 + int64_t(sizeof(Seq));
  return b;
}

void SglangCache::check_invariants() const {
  const SglangCacheConfig& g = cfg_.sglang;
  std::vector<int32_t> page_owner(size_t(g.kv_pages), 0), slot_owner(size_t(g.state_slots), 0);
  std::vector<int32_t> full_lock(nodes_.size(), 0), state_lock(nodes_.size(), 0);
  for (int32_t p : free_pages_) ++page_owner[size_t(p)];
  for (int32_t s : free_slots_) ++slot_owner[size_t(s)];
  int64_t n_nodes = 0, n_states = 0, n_evictable = 0;
  std::vector<int32_t> children(nodes_.size(), 0);
  std::vector<bool> freed(nodes_.size(), false);
  for (int32_t n : free_nodes_) freed[size_t(n)] = true;
  for (size_t n = 1; n < nodes_.size(); ++n) {
    if (freed[n]) continue;
    const Node& x = nodes_[n];
    ++n_nodes;
    ++page_owner[size_t(x.page)];
    ++children[size_t(x.parent)];
    if (x.state >= 0) ++slot_owner[size_t(x.state)], ++n_states;
    if (x.full_lock == 0) ++n_evictable;
    auto it = map_.find(x.key);
    DS_CHECK(it != map_.end() && it->second == int32_t(n), "sglang cache: node {} missing from the key map",
             n);
    DS_CHECK(x.depth == nodes_[size_t(x.parent)].depth + 1, "sglang cache: node {} depth broken", n);
  }
  for (const auto& [id, s] : seqs_) {
    for (size_t i = size_t(s.cached_pages); i < s.pages.size(); ++i) ++page_owner[size_t(s.pages[i])];
    if (s.work >= 0) ++slot_owner[size_t(s.work)];
    for (int32_t t : s.track)
      if (t >= 0) ++slot_owner[size_t(t)];
    if (s.state_locked) ++state_lock[size_t(s.last_node)];
    for (int32_t x = s.last_node; x != 0; x = nodes_[size_t(x)].parent) ++full_lock[size_t(x)];
    for (int64_t i = 0; i < s.cached_pages && s.last_node != 0; ++i)
      DS_CHECK(s.pages[size_t(i)] >= 0, "sglang cache: sequence {} lacks tree page {}", id, i);
  }
  for (size_t p = 0; p < page_owner.size(); ++p)
    DS_CHECK(page_owner[p] == 1, "sglang cache: page {} has {} owners", p, page_owner[p]);
  for (size_t s = 0; s < slot_owner.size(); ++s)
    DS_CHECK(slot_owner[s] == 1, "sglang cache: slot {} has {} owners", s, slot_owner[s]);
  DS_CHECK(n_nodes == tree_pages_ && n_states == tree_states_ && n_evictable == evictable_pages_,
           "sglang cache: counters (nodes {} / {}, states {} / {}, evictable {} / {})", n_nodes, tree_pages_,
           n_states, tree_states_, n_evictable, evictable_pages_);
  for (size_t n = 1; n < nodes_.size(); ++n) {
    if (freed[n]) continue;
    const Node& x = nodes_[n];
    DS_CHECK(x.n_children == children[n], "sglang cache: node {} child count {} vs {}", n, x.n_children,
             children[n]);
    DS_CHECK(x.full_lock == full_lock[n] && x.state_lock == state_lock[n],
             "sglang cache: node {} locks {}/{} vs holders {}/{}", n, x.full_lock, x.state_lock, full_lock[n],
             state_lock[n]);
    DS_CHECK(x.n_children > 0 || x.state >= 0, "sglang cache: leaf {} is a tombstone", n);
    DS_CHECK(x.in_leaves == (x.n_children == 0 && x.full_lock == 0) &&
                 x.in_states == (x.state >= 0 && x.state_lock == 0),
             "sglang cache: node {} LRU index membership broken", n);
    DS_CHECK(!x.in_leaves || leaves_.count({x.kv_time, int32_t(n)}), "sglang cache: node {} leaf index stale",
             n);
    DS_CHECK(!x.in_states || states_.count({x.state_time, int32_t(n)}),
             "sglang cache: node {} state index stale", n);
  }
}

}  // namespace ds
