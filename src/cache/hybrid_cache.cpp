#include "cache/hybrid_cache.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "cache/cache_emulation.h"
#include "cache/hybrid_cache_impl.h"
#include "core/check.h"
#include "core/hash.h"

namespace ds {
namespace {

int64_t slots_for(int64_t capacity_bytes, int64_t slot_bytes) {
  if (slot_bytes <= 0) return std::numeric_limits<int32_t>::max();
  return capacity_bytes / slot_bytes;
}

}  // namespace

HybridCache::Impl::Impl(const CacheConfig& c) : cfg(c) {
  cfg.validate();
  n_tiers = static_cast<int>(cfg.tiers.size());
  page_bytes = cfg.page_bytes();
  ckpt_bytes = cfg.sizes.checkpoint_bytes;
  live_bytes = cfg.sizes.live_state_bytes;
  if (cfg.page_hash_bits < 64) hash_mask = (uint64_t{1} << cfg.page_hash_bits) - 1;
  tree = PrefixTree(cfg.page_tokens);
  retention = make_retention_policy(cfg.retention, cfg.page_tokens);
  eviction = make_eviction_policy(cfg.eviction, cfg.sizes, cfg.page_tokens);
  for (int t = 0; t < n_tiers; ++t) {
    const int64_t cap = cfg.tiers[t].capacity_bytes;
    pages.emplace_back(slots_for(cap, page_bytes));
    states.emplace_back(t == 0 ? std::min<int64_t>(cfg.max_running, slots_for(cap, live_bytes)) : 0,
                        slots_for(cap, ckpt_bytes));
  }
}

// ---- lookup -------------------------------------------------------------------------------

uint64_t HybridCache::Impl::page_hash(std::span<const int32_t> tokens) const {
  return hash_page(tokens) & hash_mask;
}

void HybridCache::Impl::walk(std::span<const int32_t> prompt, TreeWalk& out) const {
  out.path.clear();
  out.hit_pages = 0;
  const int64_t P = cfg.page_tokens;
  // At least one prompt token is always computed (its logits start decoding): pages fully inside
  // [0, len - 1) only.
  const int64_t max_pages = prompt.empty() ? 0 : (static_cast<int64_t>(prompt.size()) - 1) / P;
  // Keys depend only on the tokens, so they are computed a block ahead and their map slots
  // prefetched: the walk is bound by cache misses, not by hashing.
  // A prompt looked up again (a waiting request, every step) takes its keys from the memo.
  constexpr int64_t kBlock = 16;
  uint64_t keys[kBlock];
  std::vector<uint64_t>& memo = key_memo.keys(prompt);
  int32_t node = PrefixTree::kRoot;
  uint64_t key = kRootPageKey;
  for (int64_t b = 0; b < max_pages; b += kBlock) {
    const int64_t n = std::min(kBlock, max_pages - b);
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(b + j);
      if (i < memo.size()) {
        key = memo[i];
      } else {
        key = chain_key(key, page_hash(prompt.subspan((b + j) * P, P)));
        memo.push_back(key);
      }
      keys[j] = key;
      tree.prefetch(key);
    }
    for (int64_t j = 0; j < n; ++j) {
      const int32_t child = tree.find_child(node, keys[j]);
      if (child < 0) return;
      if (!tree.same_tokens(child, prompt.subspan((b + j) * P, P))) {  // a key collision: a miss
        out.collision = true;
        return;
      }
      node = child;
      out.path.push_back(node);
      if (tree.at(node).has_checkpoint()) out.hit_pages = b + j + 1;
    }
  }
}

CacheHit HybridCache::Impl::hit_of(const TreeWalk& w) const {
  const int64_t P = cfg.page_tokens;
  CacheHit h;
  h.n_kv_tokens = static_cast<int64_t>(w.path.size()) * P;
  h.n_hit_tokens = w.hit_pages * P;
  h.n_lost_tokens = h.n_kv_tokens - h.n_hit_tokens;
  int64_t host_pages = 0;
  for (int64_t i = 0; i < w.hit_pages; ++i) host_pages += tree.at(w.path[i]).kv_tier == 1;
  h.n_hit_host_tokens = host_pages * P;
  h.n_hit_device_tokens = h.n_hit_tokens - h.n_hit_host_tokens;
  h.checkpoint_on_host = w.hit_pages > 0 && tree.at(w.path[w.hit_pages - 1]).ckpt_tier == 1;
  h.bytes_to_load = host_pages * page_bytes + (h.checkpoint_on_host ? ckpt_bytes : 0);
  if (h.bytes_to_load > 0 && n_tiers > 1 && cfg.tiers[1].read_bw_bytes_per_s > 0)
    h.load_s = static_cast<double>(h.bytes_to_load) / cfg.tiers[1].read_bw_bytes_per_s;
  return h;
}

CacheSeq& HybridCache::Impl::seq_at(SeqId id) {
  auto it = seqs.find(id);
  DS_CHECK(it != seqs.end(), "cache: unknown sequence {}", id);
  return it->second;
}
const CacheSeq& HybridCache::Impl::seq_at(SeqId id) const {
  auto it = seqs.find(id);
  DS_CHECK(it != seqs.end(), "cache: unknown sequence {}", id);
  return it->second;
}

// ---- insertion ----------------------------------------------------------------------------

// Inserts pages [path.size(), n_pages) of the sequence into the tree (or joins existing nodes),
// locking each node for the sequence. A host-tier node on the way adopts the sequence's fresh
// device page (free promotion).
void HybridCache::Impl::insert_pages(CacheSeq& s, std::span<const int32_t> tokens, int64_t n_pages) {
  const int64_t P = cfg.page_tokens;
  for (int64_t i = static_cast<int64_t>(s.path.size()); i < n_pages && !s.tree_closed; ++i) {
    const std::span<const int32_t> page_ids = tokens.subspan(i * P, P);
    const uint64_t key = chain_key(s.tail_key, page_hash(page_ids));
    const int32_t parent = s.path.empty() ? PrefixTree::kRoot : s.path.back();
    const int32_t page = s.pages[i];
    int32_t node = tree.find_child(parent, key);
    if (node >= 0 && !tree.same_tokens(node, page_ids)) {  // key taken by other tokens: not cacheable
      ++stats.hash_collisions;
      s.tree_closed = true;
      break;
    }
    if (node >= 0) account(node, -1);
    if (node >= 0 && tree.at(node).kv_tier == 1) {
      TreeNode& n = tree.at(node);
      pages[1].unref(n.page);
      charge(1, ByteKind::Kv, -page_bytes);
      n.page = page;
      pages[0].ref(page);
      tree.set_kv_tier(node, 0);
    } else if (node < 0) {
      node = tree.add_child(parent, key, page, 0, page_ids);
      if (node < 0) {
        ++stats.hash_collisions;
        s.tree_closed = true;
        break;
      }
      pages[0].ref(page);
      ++stats.pages_inserted;
    }
    TreeNode& n = tree.at(node);
    ++n.lock_count;
    n.kv_access = tick;
    account(node, +1);
    s.path.push_back(node);
    s.tail_key = key;
  }
}

int32_t HybridCache::Impl::allocate_checkpoint_slot() {
  if (free_bytes(0) < ckpt_bytes && !make_room(0, ckpt_bytes)) return -1;
  const int32_t slot = states[0].allocate_checkpoint();
  if (slot >= 0) charge(0, ByteKind::Checkpoint, ckpt_bytes);
  return slot;
}

void HybridCache::Impl::free_checkpoint_slot(int32_t slot) {
  states[0].free_checkpoint(slot);
  charge(0, ByteKind::Checkpoint, -ckpt_bytes);
}

// Gives a written device checkpoint slot (bytes already charged) to `node`.
void HybridCache::Impl::attach_checkpoint(int32_t node, int32_t slot, CheckpointReason reason) {
  account(node, -1);
  TreeNode& n = tree.at(node);
  n.ckpt_slot = slot;
  n.ckpt_tier = 0;
  n.ckpt_reason = reason;
  n.ckpt_access = tick;
  if (eviction->uses_replay_tokens()) {
    int32_t a = n.parent;
    while (a != PrefixTree::kRoot && !tree.at(a).has_checkpoint()) a = tree.at(a).parent;
    const int64_t replay = static_cast<int64_t>(n.depth - tree.at(a).depth) * cfg.page_tokens;
    n.ckpt_value = eviction->checkpoint_value(replay, static_cast<int64_t>(n.depth) * cfg.page_tokens);
  }
  account(node, +1);
  ++stats.checkpoints_created;
  queue_ckpt(node);
  queue_kv(node);  // its KV-leaf score includes the checkpoint's value
}

// A planned checkpoint whose position has been computed: to the tree node of its page when that
// node exists and has no checkpoint yet, else its slot is freed. true = kept.
bool HybridCache::Impl::hand_to_node(CacheSeq& s, const PendingCheckpoint& c, CommitReport* report) {
  const int64_t page = c.position / cfg.page_tokens;
  const int32_t node = page >= 1 && page <= static_cast<int64_t>(s.path.size()) ? s.path[page - 1] : -1;
  const bool keep = node >= 0 && !tree.at(node).has_checkpoint();
  if (keep) {
    attach_checkpoint(node, c.slot, c.reason);
  } else {
    free_checkpoint_slot(c.slot);
    ++stats.checkpoints_duplicate;
  }
  if (report) (keep ? report->kept : report->dropped).push_back(c.position);
  return keep;
}

void HybridCache::Impl::release(SeqId id) {
  CacheSeq& s = seq_at(id);
  for (auto it = s.path.rbegin(); it != s.path.rend(); ++it) {
    DS_CHECK(tree.at(*it).lock_count > 0, "cache: node {} of sequence {} is not locked", *it, id);
    if (unlock(*it)) queue_kv(*it);
  }
  if (eviction->drops_superseded_checkpoints()) queue_superseded(s);
  if (eviction->holds_paths()) hold_path(s);
  for (int32_t p : s.pages)
    if (pages[0].unref(p)) charge(0, ByteKind::Kv, -page_bytes);
  for (const PendingCheckpoint& c : s.pending) free_checkpoint_slot(c.slot);
  if (s.decode_end.slot >= 0) free_checkpoint_slot(s.decode_end.slot);
  states[0].free_live(s.live_slot);
  charge(0, ByteKind::Live, -live_bytes);
  seqs.erase(id);
}

// ---- public API ---------------------------------------------------------------------------

HybridCache::HybridCache(const CacheConfig& config) {
  emu_ = make_cache_emulation(config);
  if (!emu_) impl_ = std::make_unique<Impl>(config);
}
HybridCache::~HybridCache() = default;

const CacheConfig& HybridCache::config() const {
  if (emu_) return emu_->config();
  return impl_->cfg;
}

CacheHit HybridCache::match(std::span<const int32_t> prompt) const {
  if (emu_) return emu_->match(prompt);
  TreeWalk w;
  impl_->walk(prompt, w);
  return impl_->hit_of(w);
}

void HybridCache::announce(std::span<const int32_t> prompt) {
  if (emu_) return;
  ++impl_->n_arrived;
  if (!impl_->eviction->uses_arrivals()) return;
  Impl& m = *impl_;
  if (m.eviction->arrivals_only_under_overload() && !m.overloaded()) return;
  TreeWalk w;
  m.walk(prompt, w);
  if (w.path.empty()) return;
  const uint32_t rank = ++m.n_announced;
  for (int32_t node : w.path) m.pending.emplace(node, rank);  // an earlier waiting request keeps its rank
  m.queue_kv(w.path.back());  // re-scored; inner nodes are scored when they become leaves
}

std::optional<Admission> HybridCache::admit(std::span<const int32_t> prompt, CacheHit* refused_hit) {
  if (emu_) {
    auto adm = emu_->admit(prompt);
    if (!adm && refused_hit) *refused_hit = emu_->match(prompt);
    return adm;
  }
  Impl& m = *impl_;
  const auto n_evictions = [&m] {
    return std::accumulate(m.stats.evictions.begin(), m.stats.evictions.end(), int64_t{0});
  };
  const int64_t evictions_before = n_evictions();
  TreeWalk w;
  m.walk(prompt, w);
  // One logical tick per admission (the recency clock of the eviction policies); a retry of the
  // admission that was just aborted before computing anything (the scheduler found no room for its
  // prompt) is the same admission.
  const int32_t walk_hit = w.hit_pages > 0 ? w.path[w.hit_pages - 1] : -1;
  const bool retry = walk_hit == m.retry_node && static_cast<int64_t>(prompt.size()) == m.retry_tokens;
  if (!retry) ++m.tick;
  m.stats.hash_collisions += w.collision;
  if (!m.pending.empty() && !w.path.empty()) {  // admitted along it: no longer waiting
    for (int32_t node : w.path) m.pending.erase(node);
    m.queue_kv(w.path.back());
  }
  const CacheHit hit = m.hit_of(w);
  if (m.eviction->holds_paths() && !retry) m.observe_reuse(prompt, w);
  if (w.hit_pages > 0 && !retry) {
    const CheckpointReason r = m.tree.at(w.path[w.hit_pages - 1]).ckpt_reason;
    m.decode_end_hits += r == CheckpointReason::DecodeEnd;
    m.prompt_end_hits += r == CheckpointReason::PromptEnd;
  }
  // Semantic branch point: the prompt leaves a cached path at a node that has other children
  // (computed before room making, which may evict the unlocked part of the walk).
  int64_t branch_tokens = 0;
  if (!w.path.empty() && static_cast<int64_t>(w.path.size()) > w.hit_pages &&
      m.tree.at(w.path.back()).n_children > 0)
    branch_tokens = static_cast<int64_t>(w.path.size()) * m.cfg.page_tokens;
  if (branch_tokens > 0 && !retry) m.last_mid_fork = m.tick;
  // Lock the restorable path first so room making cannot evict it, and pin its checkpoint.
  for (int64_t i = 0; i < w.hit_pages; ++i) {
    m.lock(w.path[i]);
    m.tree.at(w.path[i]).kv_access = m.tick;
  }
  const int32_t hit_node = w.hit_pages > 0 ? w.path[w.hit_pages - 1] : -1;
  m.pinned_ckpt = hit_node;
  const int64_t need = m.live_bytes + hit.n_hit_host_tokens / m.cfg.page_tokens * m.page_bytes;
  int32_t slot = -1;
  m.waiting_others = m.n_arrived - m.n_finished - static_cast<int64_t>(m.seqs.size()) - 1;
  m.admission_mode = m.eviction->holds_paths() && !m.seqs.empty();
  if (m.free_bytes(0) >= need || m.make_room(0, need)) slot = m.states[0].allocate_live();
  m.admission_mode = false;
  m.pinned_ckpt = -1;
  if (slot < 0) {
    for (int64_t i = w.hit_pages - 1; i >= 0; --i)
      if (m.unlock(w.path[i])) m.queue_kv(w.path[i]);
    ++m.stats.failed_admissions;
    if (refused_hit) {
      if (n_evictions() != evictions_before) m.walk(prompt, w);  // room making changed the tree
      *refused_hit = m.hit_of(w);
    }
    return std::nullopt;
  }
  m.charge(0, ByteKind::Live, m.live_bytes);
  const SeqId id = m.next_seq++;
  CacheSeq& s = m.seqs[id];
  s.prompt_tokens = static_cast<int64_t>(prompt.size());
  s.hit_tokens = s.reserved_tokens = s.committed_tokens = hit.n_hit_tokens;
  s.live_slot = slot;
  s.branch_tokens = branch_tokens;
  s.held = hit_node >= 0 && m.tree.at(hit_node).held;
  if (!retry) {
    m.stats.held_hit_tokens += s.held ? hit.n_hit_tokens : 0;
    m.stats.overloaded_admissions += m.eviction->holds_paths() && m.overloaded();
  }
  s.tail_key = w.hit_pages > 0 ? m.tree.at(hit_node).key : kRootPageKey;
  for (int64_t i = 0; i < w.hit_pages; ++i) {
    const int32_t node = w.path[i];
    TreeNode& n = m.tree.at(node);
    if (n.kv_tier == 1) {  // promote: device page in, host page out (room was made above)
      m.account(node, -1);
      const int32_t page = m.pages[0].allocate();
      DS_CHECK(page >= 0, "cache: device page pool exhausted while promoting node {}", node);
      m.charge(0, ByteKind::Kv, m.page_bytes);
      m.transfers.push_back({TransferKind::Page, 1, 0, n.page, page});
      m.pages[1].unref(n.page);
      m.charge(1, ByteKind::Kv, -m.page_bytes);
      n.page = page;
      m.tree.set_kv_tier(node, 0);
      m.account(node, +1);
      ++m.stats.pages_promoted;
    }
    m.pages[0].ref(n.page);  // the sequence's reference (the tree holds the other)
    s.pages.push_back(n.page);
    s.path.push_back(node);
  }
  Admission adm{id, hit, {}};
  if (hit_node >= 0) {
    const TreeNode& h = m.tree.at(hit_node);
    adm.restore_from = CheckpointRef{h.ckpt_tier, h.ckpt_slot};
    m.transfers.push_back({TransferKind::Restore, h.ckpt_tier, 0, h.ckpt_slot, slot});
    ++m.stats.checkpoints_used;
    m.tree.at(hit_node).ckpt_access = m.tick;
    m.queue_ckpt(hit_node);
  }
  count_admission(m.stats, s.prompt_tokens, hit);
  return adm;
}

void count_admission(CacheStats& st, int64_t prompt_tokens, const CacheHit& hit) {
  ++st.n_admissions;
  st.prompt_tokens += prompt_tokens;
  st.hit_tokens += hit.n_hit_tokens;
  st.kv_reachable_tokens += hit.n_kv_tokens;
  st.lost_tokens += hit.n_lost_tokens;
  st.miss_tokens += prompt_tokens - hit.n_hit_tokens;
  st.loaded_bytes += hit.bytes_to_load;
  st.tiers[0].hit_tokens += hit.n_hit_device_tokens;
  st.tiers[1].hit_tokens += hit.n_hit_host_tokens;
}

bool HybridCache::reserve(SeqId seq, int64_t n_tokens_total) {
  if (emu_) return emu_->reserve(seq, n_tokens_total);
  Impl& m = *impl_;
  CacheSeq& s = m.seq_at(seq);
  DS_CHECK(n_tokens_total >= 0 && n_tokens_total <= (int64_t{1} << 40),
           "cache: reserve of {} tokens for sequence {}", n_tokens_total, seq);
  const int64_t want_pages = (n_tokens_total + m.cfg.page_tokens - 1) / m.cfg.page_tokens;
  const int64_t n_new = want_pages - static_cast<int64_t>(s.pages.size());
  if (n_new > 0) {
    const int64_t need = n_new * m.page_bytes;
    // A prompt still being computed may not take held paths while other requests run.
    m.waiting_others = m.n_arrived - m.n_finished - static_cast<int64_t>(m.seqs.size());
    m.admission_mode = m.eviction->holds_paths() && m.seqs.size() > 1 && s.committed_tokens < s.prompt_tokens;
    const bool room = m.free_bytes(0) >= need || m.make_room(0, need);
    m.admission_mode = false;
    if (!room) {
      ++m.stats.failed_reserves;
      return false;
    }
    CacheSeq& s2 = m.seq_at(seq);
    for (int64_t i = 0; i < n_new; ++i) {
      const int32_t page = m.pages[0].allocate();
      DS_CHECK(page >= 0, "cache: device page pool exhausted for sequence {}", seq);
      s2.pages.push_back(page);
    }
    m.charge(0, ByteKind::Kv, need);
  }
  CacheSeq& s3 = m.seq_at(seq);
  s3.reserved_tokens = std::max(s3.reserved_tokens, n_tokens_total);
  return true;
}

std::vector<PlannedCheckpoint> HybridCache::plan_checkpoints(SeqId seq, int64_t begin, int64_t end) {
  if (emu_) return emu_->plan_checkpoints(seq, begin, end);
  Impl& m = *impl_;
  const CacheSeq& s0 = m.seq_at(seq);
  DS_CHECK(begin >= 0 && begin <= end && end <= s0.reserved_tokens,
           "cache: checkpoints planned for tokens [{}, {}) but sequence {} has {} reserved", begin, end, seq,
           s0.reserved_tokens);
  std::vector<WantedCheckpoint> want;
  m.retention->wanted({m.cfg.page_tokens, s0.prompt_tokens, s0.branch_tokens, m.forks_mid_path()}, begin, end,
                      want);
  std::vector<PlannedCheckpoint> out;
  out.reserve(want.size() + 1);
  for (const WantedCheckpoint& c : want) {
    const int32_t slot = m.allocate_checkpoint_slot();
    if (slot < 0) {
      ++m.stats.checkpoints_skipped;
      continue;
    }
    m.seq_at(seq).pending.push_back({c.position, slot, c.reason});
    out.push_back({c.position, slot});
  }
  const int64_t last = end / m.cfg.page_tokens * m.cfg.page_tokens;
  if (m.retention->keeps_decode_end() && last > begin && last > 0) {
    if (m.seq_at(seq).decode_end.slot < 0) m.seq_at(seq).decode_end.slot = m.allocate_checkpoint_slot();
    CacheSeq& s = m.seq_at(seq);
    if (s.decode_end.slot >= 0) {
      s.decode_end.position = last;
      out.push_back({last, s.decode_end.slot});
    }
  }
  return out;
}

CommitReport HybridCache::commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed) {
  if (emu_) return emu_->commit(seq, tokens, n_computed);
  Impl& m = *impl_;
  CacheSeq& s = m.seq_at(seq);
  DS_CHECK(n_computed >= 0 && n_computed <= static_cast<int64_t>(tokens.size()),
           "cache: commit of {} computed tokens with only {} tokens (sequence {})", n_computed, tokens.size(),
           seq);
  DS_CHECK(n_computed <= static_cast<int64_t>(s.pages.size()) * m.cfg.page_tokens,
           "cache: commit of {} tokens but only {} reserved (sequence {})", n_computed, s.reserved_tokens,
           seq);
  CommitReport report;
  const int64_t inserted0 = m.stats.pages_inserted;
  if (n_computed > s.committed_tokens) m.insert_pages(s, tokens, n_computed / m.cfg.page_tokens);
  report.n_pages_inserted = m.stats.pages_inserted - inserted0;
  size_t n_done = 0;
  for (; n_done < s.pending.size() && s.pending[n_done].position <= n_computed; ++n_done)
    m.hand_to_node(s, s.pending[n_done], &report);
  s.pending.erase(s.pending.begin(), s.pending.begin() + static_cast<std::ptrdiff_t>(n_done));
  s.committed_tokens = std::max(s.committed_tokens, n_computed);
  return report;
}

void HybridCache::finish(SeqId seq, std::span<const int32_t> all_tokens) {
  if (emu_) return emu_->finish(seq, all_tokens);
  Impl& m = *impl_;
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(all_tokens.size()), m.seq_at(seq).reserved_tokens);
  commit(seq, all_tokens, n);
  CacheSeq& s = m.seq_at(seq);
  if (s.decode_end.slot >= 0) {
    if (s.decode_end.position == n / m.cfg.page_tokens * m.cfg.page_tokens)
      m.hand_to_node(s, s.decode_end, nullptr);
    else
      m.free_checkpoint_slot(s.decode_end.slot);
    s.decode_end.slot = -1;
  }
  ++m.n_finished;
  m.release(seq);
}

void HybridCache::abort(SeqId seq) {
  if (emu_) return emu_->abort(seq);
  Impl& m = *impl_;
  const CacheSeq& s = m.seq_at(seq);
  m.retry_node = -2;
  if (s.committed_tokens == s.hit_tokens && s.path.size() * m.cfg.page_tokens == size_t(s.hit_tokens)) {
    m.retry_node = s.path.empty() ? -1 : s.path.back();
    m.retry_tokens = s.prompt_tokens;
  }
  m.release(seq);
}

std::vector<CacheTransfer> HybridCache::take_transfers() {
  if (emu_) return emu_->take_transfers();
  std::vector<CacheTransfer> out;
  out.swap(impl_->transfers);
  return out;
}

std::span<const int32_t> HybridCache::page_table(SeqId seq) const {
  if (emu_) return emu_->page_table(seq);
  return impl_->seq_at(seq).pages;
}
int32_t HybridCache::live_slot(SeqId seq) const {
  if (emu_) return emu_->live_slot(seq);
  return impl_->seq_at(seq).live_slot;
}
int64_t HybridCache::n_running() const {
  if (emu_) return emu_->n_running();
  return static_cast<int64_t>(impl_->seqs.size());
}
const CacheStats& HybridCache::stats() const {
  if (emu_) return emu_->stats();
  return impl_->stats;
}
void HybridCache::check_invariants() const {
  if (emu_) return emu_->check_invariants();
  impl_->check_invariants();
}

int64_t HybridCache::bookkeeping_bytes() const {
  if (emu_) return emu_->bookkeeping_bytes();
  const Impl& m = *impl_;
  int64_t b = m.tree.memory_bytes();
  for (int t = 0; t < m.n_tiers; ++t) {
    b += m.pages[t].n_ids() * static_cast<int64_t>(2 * sizeof(int32_t));  // refcount + free-list room
    b += (m.kv_queue[t].size() + m.ckpt_queue[t].size()) * static_cast<int64_t>(sizeof(EvictionEntry));
  }
  b += m.reuse.memory_bytes();
  for (const auto& [id, s] : m.seqs)
    b += static_cast<int64_t>((s.pages.size() + s.path.size()) * sizeof(int32_t));
  return b;
}

}  // namespace ds
