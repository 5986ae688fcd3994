#include "cache/vllm_cache.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

VllmCache::VllmCache(const CacheConfig& config) : cfg_(config) {
  const VllmCacheConfig& v = cfg_.vllm;
  DS_CHECK(v.num_blocks > 0 && v.num_blocks < (int64_t{1} << 30),
           "vllm cache: num_blocks must be in [1, 2^30), got {}", v.num_blocks);
  DS_CHECK(v.kda_groups >= 1 && v.kda_groups <= 64, "vllm cache: kda_groups must be in [1, 64], got {}",
           v.kda_groups);
  DS_CHECK(v.live_blocks >= 0 && v.live_blocks <= 1024,
           "vllm cache: live_blocks must be in [0, 1024], got {}", v.live_blocks);
  DS_CHECK(v.retention_interval >= 0 && v.retention_interval % cfg_.page_tokens == 0,
           "vllm cache: retention_interval {} must be 0 or a multiple of the block size {}",
           v.retention_interval, cfg_.page_tokens);
  DS_CHECK(v.host_blocks >= 0 && v.block_bytes > 0, "vllm cache: bad host_blocks {} / block_bytes {}",
           v.host_blocks, v.block_bytes);
  blocks_.resize(size_t(v.num_blocks));
  for (int32_t b = 0; b < int32_t(v.num_blocks); ++b) free_block(b);
}

// ---- free queue ------------------------------------------------------------------------------

void VllmCache::add_bytes(int64_t kv_blocks, int64_t ckpt_blocks, int64_t live_blocks) {
  TierStats& t = stats_.tiers[0];
  t.kv_bytes += kv_blocks * cfg_.vllm.block_bytes;
  t.checkpoint_bytes += ckpt_blocks * cfg_.vllm.block_bytes;
  t.live_bytes += live_blocks * cfg_.vllm.block_bytes;
  t.peak_total_bytes = std::max(t.peak_total_bytes, t.total_bytes());
}

// A block counts as KV / checkpoint while it is cached or held, and as live state while a request
// holds it uncached.
static void classify(const auto& blk, int64_t& kv, int64_t& ckpt, int64_t& live) {
  kv = ckpt = live = 0;
  if (blk.group < 0) {
    kv = (blk.ref > 0 || blk.key != 0) ? 1 : 0;
  } else if (blk.key != 0) {
    ckpt = 1;
  } else {
    live = blk.ref > 0 ? 1 : 0;
  }
}

void VllmCache::free_block(int32_t b) {
  Block& blk = blocks_[size_t(b)];
  if (blk.ref > 0) {
    int64_t kv, ck, lv;
    classify(blk, kv, ck, lv);
    add_bytes(-kv, -ck, -lv);
    --blk.ref;
    classify(blk, kv, ck, lv);
    add_bytes(kv, ck, lv);
  }
  if (blk.ref > 0) return;
  blk.in_free = true;
  blk.prev = tail_;
  blk.next = -1;
  if (tail_ >= 0)
    blocks_[size_t(tail_)].next = b;
  else
    head_ = b;
  tail_ = b;
  ++n_free_;
}

void VllmCache::touch(int32_t b) {
  Block& blk = blocks_[size_t(b)];
  if (blk.in_free) {
    if (blk.prev >= 0)
      blocks_[size_t(blk.prev)].next = blk.next;
    else
      head_ = blk.next;
    if (blk.next >= 0)
      blocks_[size_t(blk.next)].prev = blk.prev;
    else
      tail_ = blk.prev;
    blk.in_free = false;
    blk.prev = blk.next = -1;
    --n_free_;
  }
  int64_t kv, ck, lv;
  classify(blk, kv, ck, lv);
  add_bytes(-kv, -ck, -lv);
  ++blk.ref;
  classify(blk, kv, ck, lv);
  add_bytes(kv, ck, lv);
}

// Takes the least recently freed block; whatever it cached is evicted.
int32_t VllmCache::pop_free() {
  DS_CHECK(head_ >= 0, "vllm cache: free queue empty");
  const int32_t b = head_;
  Block& blk = blocks_[size_t(b)];
  if (blk.key != 0) {
    int64_t kv, ck, lv;
    classify(blk, kv, ck, lv);
    add_bytes(-kv, -ck, -lv);
    auto it = map_.find(blk.key);
    if (it != map_.end() && it->second == b) map_.erase(it);
    if (blk.group < 0) {
      ++stats_.pages_dropped;
      ++stats_.evictions[size_t(EvictReason::KvDropped)];
    } else if (blk.group == 0) {
      ++stats_.checkpoints_dropped;
      ++stats_.evictions[size_t(EvictReason::CheckpointDropped)];
    }
    blk.key = 0;
  }
  blk.group = -1;
  touch(b);
  return b;
}

void VllmCache::cache_block(int32_t b, uint64_t key, int group) {
  Block& blk = blocks_[size_t(b)];
  int64_t kv, ck, lv;
  classify(blk, kv, ck, lv);
  add_bytes(-kv, -ck, -lv);
  blk.key = key;
  blk.group = int8_t(group);
  map_[key] = b;
  classify(blk, kv, ck, lv);
  add_bytes(kv, ck, lv);
}

void VllmCache::host_store(uint64_t key) {
  if (cfg_.vllm.host_blocks <= 0) return;
  auto it = host_map_.find(key);
  if (it != host_map_.end()) {
    host_lru_.splice(host_lru_.end(), host_lru_, it->second);
    return;
  }
  host_lru_.push_back(key);
  host_map_[key] = std::prev(host_lru_.end());
  if (int64_t(host_map_.size()) > cfg_.vllm.host_blocks) {
    host_map_.erase(host_lru_.front());
    host_lru_.pop_front();
  }
  stats_.tiers[1].kv_bytes = int64_t(host_map_.size()) * cfg_.vllm.block_bytes;
}

uint64_t VllmCache::state_key(uint64_t block_key, int group) const {
  return mix64(block_key ^ (uint64_t(group) + 1) * kGoldenGamma) | 1;
}

// ---- lookup ----------------------------------------------------------------------------------

// Keys are chained from the start, so they are computed lazily, only as far as the scans below read
// them: a prompt that misses early costs a few page hashes, not the whole prompt (a blocked
// 600k-token request is looked up again every step).
void VllmCache::walk(std::span<const int32_t> prompt, Walk& w) const {
  const int64_t B = cfg_.page_tokens, G = cfg_.vllm.kda_groups;
  const int64_t nb = prompt.empty() ? 0 : int64_t(prompt.size() - 1) / B;
  std::vector<uint64_t>& memo = memo_.keys(prompt);
  w.keys = memo;
  w.keys.reserve(size_t(nb));
  auto key = [&](int64_t i) {  // key of block i < nb, extending the chain as needed
    while (int64_t(w.keys.size()) <= i) {
      const int64_t j = int64_t(w.keys.size());
      const uint64_t prev = j == 0 ? kRootPageKey : w.keys.back();
      w.keys.push_back(chain_key(prev, hash_page(prompt.subspan(size_t(j * B), size_t(B)))));
    }
    return w.keys[size_t(i)];
  };
  auto states_on = [&](int64_t j, bool host_ok) {  // a state after block j - 1 in every group
    for (int g = 0; g < G; ++g) {
      const uint64_t sk = state_key(key(j - 1), g);
      if (!device_has(sk) && !(host_ok && host_has(sk))) return false;
    }
    return true;
  };
  w.attn_blocks = 0;
  while (w.attn_blocks < nb && device_has(key(w.attn_blocks))) ++w.attn_blocks;
  w.hit_blocks = 0;
  for (int64_t j = w.attn_blocks; j >= 1; --j)
    if (states_on(j, false)) {
      w.hit_blocks = j;
      break;
    }
  w.host_hit_blocks = w.hit_blocks;
  if (cfg_.vllm.host_blocks > 0) {
    int64_t reach = w.attn_blocks;
    while (reach < nb && (device_has(key(reach)) || host_has(key(reach)))) ++reach;
    for (int64_t j = reach; j > w.hit_blocks; --j)
      if (states_on(j, true)) {
        w.host_hit_blocks = j;
        break;
      }
  }
  if (w.keys.size() > memo.size()) memo = w.keys;
}

CacheHit VllmCache::hit_of(const Walk& w) const {
  const int64_t B = cfg_.page_tokens, G = cfg_.vllm.kda_groups;
  CacheHit h;
  h.n_hit_tokens = w.host_hit_blocks * B;
  h.n_kv_tokens = std::max(w.attn_blocks, w.host_hit_blocks) * B;
  h.n_lost_tokens = h.n_kv_tokens - h.n_hit_tokens;
  h.n_hit_device_tokens = w.hit_blocks * B;
  h.n_hit_host_tokens = (w.host_hit_blocks - w.hit_blocks) * B;
  if (w.host_hit_blocks > w.hit_blocks) {
    int64_t blocks = 0;
    for (int64_t i = w.hit_blocks; i < w.host_hit_blocks; ++i)
      blocks += device_has(w.keys[size_t(i)]) ? 0 : 1;
    for (int g = 0; g < G; ++g)
      blocks += device_has(state_key(w.keys[size_t(w.host_hit_blocks - 1)], g)) ? 0 : 1;
    h.checkpoint_on_host = true;
    h.bytes_to_load = blocks * cfg_.vllm.block_bytes;
    const double bw = cfg_.tiers.size() > 1 ? cfg_.tiers[1].read_bw_bytes_per_s : 0;
    h.load_s = bw > 0 ? double(h.bytes_to_load) / bw : 0;
  }
  return h;
}

CacheHit VllmCache::match(std::span<const int32_t> prompt) const {
  Walk w;
  walk(prompt, w);
  return hit_of(w);
}

// ---- sequences -------------------------------------------------------------------------------

std::optional<Admission> VllmCache::admit(std::span<const int32_t> prompt) {
  Walk w;
  walk(prompt, w);
  const CacheHit hit = hit_of(w);
  const int64_t B = cfg_.page_tokens, G = cfg_.vllm.kda_groups, n_hit = w.host_hit_blocks;
  // Blocks to take from the free queue: live state, and a device block for every hit block that
  // comes from the host. Hit blocks on the device leave the queue (if there) without eviction.
  int64_t need = cfg_.vllm.live_blocks, leaving = 0;
  auto on_device = [&](uint64_t k, int64_t& from_queue) {
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    from_queue += blocks_[size_t(it->second)].in_free ? 1 : 0;
    return true;
  };
  for (int64_t i = 0; i < n_hit; ++i)
    if (!on_device(w.keys[size_t(i)], leaving)) ++need;
  if (n_hit > 0)
    for (int g = 0; g < G; ++g)
      if (!on_device(state_key(w.keys[size_t(n_hit - 1)], g), leaving)) ++need;
  // vLLM's admission gate (scheduler_reserve_full_isl, default True since v0.19:
  // KVCacheManager.can_fit_full_sequence): the whole prompt must fit in the free blocks, not only
  // its first chunk, so chunked prefill cannot over-admit and then preempt.
  const int64_t prompt_blocks = (int64_t(prompt.size()) + B - 1) / B;
  if (n_free() - leaving < need + std::max<int64_t>(0, prompt_blocks - n_hit)) {
    ++stats_.failed_admissions;
    return std::nullopt;
  }
  const SeqId id = next_seq_++;
  Seq& s = seqs_[id];
  s.prompt_tokens = int64_t(prompt.size());
  // Touch the device hit blocks first (so the allocations below cannot evict them).
  std::vector<int64_t> from_host;
  for (int64_t i = 0; i < n_hit; ++i) {
    auto it = map_.find(w.keys[size_t(i)]);
    if (it != map_.end()) {
      touch(it->second);
      s.pages.push_back(it->second);
    } else {
      s.pages.push_back(-1);
      from_host.push_back(i);
    }
    s.keys.push_back(w.keys[size_t(i)]);
  }
  std::vector<int32_t> restore(size_t(G), -1);
  if (n_hit > 0)
    for (int g = 0; g < G; ++g) {
      auto it = map_.find(state_key(w.keys[size_t(n_hit - 1)], g));
      if (it != map_.end()) touch(it->second), restore[size_t(g)] = it->second;
    }
  for (int64_t i : from_host) {  // load: a fresh device block now caches the host copy
    const int32_t b = pop_free();
    cache_block(b, w.keys[size_t(i)], -1);
    host_store(w.keys[size_t(i)]);
    s.pages[size_t(i)] = b;
    transfers_.push_back({TransferKind::Page, 1, 0, -1, b});
    ++stats_.pages_promoted;
  }
  for (int g = 0; g < G && n_hit > 0; ++g)
    if (restore[size_t(g)] < 0) {
      const uint64_t sk = state_key(w.keys[size_t(n_hit - 1)], g);
      const int32_t b = pop_free();
      cache_block(b, sk, g);
      host_store(sk);
      restore[size_t(g)] = b;
    }
  for (int32_t b : restore)
    if (b >= 0) s.held.push_back(b);
  for (int64_t i = 0; i < cfg_.vllm.live_blocks; ++i) {
    const int32_t b = pop_free();
    blocks_[size_t(b)].group = int8_t(i % G);
    add_bytes(-1, 0, 1);  // re-classed as live state (pop_free counted it as KV)
    s.held.push_back(b);
  }
  s.committed_blocks = n_hit;
  s.tail_key = n_hit > 0 ? w.keys[size_t(n_hit - 1)] : kRootPageKey;
  // Shared-prefix junction: the cached attention prefix reaches past every cached state.
  if (w.attn_blocks > n_hit && w.attn_blocks * B < s.prompt_tokens) s.junction_tokens = w.attn_blocks * B;
  Admission adm{id, hit, {}};
  if (n_hit > 0) {
    adm.restore_from = CheckpointRef{0, restore[0]};
    transfers_.push_back({TransferKind::Restore, int8_t(hit.checkpoint_on_host ? 1 : 0), 0, restore[0],
                          s.held.empty() ? -1 : s.held.back()});
    ++stats_.checkpoints_used;
  }
  count_admission(stats_, s.prompt_tokens, hit);
  return adm;
}

bool VllmCache::reserve(SeqId seq, int64_t n_tokens_total) {
  Seq& s = seqs_.at(seq);
  const int64_t want = (n_tokens_total + cfg_.page_tokens - 1) / cfg_.page_tokens;
  const int64_t n_new = want - int64_t(s.pages.size());
  if (n_new <= 0) return true;
  if (n_free() < n_new) {
    ++stats_.failed_reserves;
    return false;
  }
  for (int64_t i = 0; i < n_new; ++i) s.pages.push_back(pop_free());
  return true;
}

std::vector<PlannedCheckpoint> VllmCache::plan_checkpoints(SeqId seq, int64_t begin, int64_t end) {
  Seq& s = seqs_.at(seq);
  const int64_t B = cfg_.page_tokens, G = cfg_.vllm.kda_groups;
  const int64_t tail = s.prompt_tokens / B * B;  // the latest replay boundary of the prompt
  std::vector<int64_t> want;
  const int64_t N = cfg_.vllm.retention_interval;
  if (N > 0)
    for (int64_t p = (begin / N + 1) * N; p <= std::min(end, tail); p += N) want.push_back(p);
  if (s.junction_tokens > begin && s.junction_tokens <= end) want.push_back(s.junction_tokens);
  if (tail > begin && tail <= end) want.push_back(tail);
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  std::vector<PlannedCheckpoint> out;
  for (int64_t p : want) {
    if (p <= 0) continue;
    if (n_free() < G) {
      ++stats_.checkpoints_skipped;
      continue;
    }
    std::vector<int32_t> bl;
    for (int64_t g = 0; g < G; ++g) bl.push_back(pop_free());
    out.push_back({p, bl[0]});
    s.planned.push_back({p, std::move(bl)});
  }
  return out;
}

CommitReport VllmCache::commit(SeqId seq, std::span<const int32_t> tokens, int64_t n_computed) {
  Seq& s = seqs_.at(seq);
  const int64_t B = cfg_.page_tokens;
  CommitReport rep;
  const int64_t full = std::min<int64_t>(n_computed, int64_t(tokens.size())) / B;
  for (int64_t i = s.committed_blocks; i < full && i < int64_t(s.pages.size()); ++i) {
    s.tail_key = chain_key(s.tail_key, hash_page(tokens.subspan(size_t(i * B), size_t(B))));
    s.keys.push_back(s.tail_key);
    if (!device_has(s.tail_key)) {  // a duplicate of a cached block stays uncached
      cache_block(s.pages[size_t(i)], s.tail_key, -1);
      ++rep.n_pages_inserted;
      ++stats_.pages_inserted;
    }
    host_store(s.tail_key);
    s.committed_blocks = i + 1;
  }
  for (auto it = s.planned.begin(); it != s.planned.end();) {
    const int64_t p = it->first;
    if (p > n_computed || p / B > s.committed_blocks) {
      ++it;
      continue;
    }
    const uint64_t key = s.keys[size_t(p / B - 1)];
    bool kept = false;
    for (size_t g = 0; g < it->second.size(); ++g) {
      const uint64_t sk = state_key(key, int(g));
      const int32_t b = it->second[g];
      if (!device_has(sk)) {
        cache_block(b, sk, int(g));
        host_store(sk);
        kept = true;
      }
      s.held.push_back(b);  // held until the request is freed, like vLLM's block table
    }
    (kept ? rep.kept : rep.dropped).push_back(p);
    if (kept) ++stats_.checkpoints_created;
    it = s.planned.erase(it);
  }
  return rep;
}

void VllmCache::release(SeqId id) {
  Seq& s = seqs_.at(id);
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it)
    if (*it >= 0) free_block(*it);
  for (auto& [p, bl] : s.planned)
    for (int32_t b : bl) free_block(b);
  for (auto it = s.held.rbegin(); it != s.held.rend(); ++it) free_block(*it);
  seqs_.erase(id);
}

void VllmCache::finish(SeqId seq, std::span<const int32_t> all_tokens) {
  Seq& s = seqs_.at(seq);
  commit(seq, all_tokens,
         std::min<int64_t>(int64_t(all_tokens.size()), int64_t(s.pages.size()) * cfg_.page_tokens));
  release(seq);
}

void VllmCache::abort(SeqId seq) {
  release(seq);
}

std::vector<CacheTransfer> VllmCache::take_transfers() {
  std::vector<CacheTransfer> t = std::move(transfers_);
  transfers_.clear();
  return t;
}

std::span<const int32_t> VllmCache::page_table(SeqId seq) const {
  return seqs_.at(seq).pages;
}

int32_t VllmCache::live_slot(SeqId seq) const {
  const Seq& s = seqs_.at(seq);
  return s.held.empty() ? -1 : s.held.back();
}

int64_t VllmCache::bookkeeping_bytes() const {
  int64_t b =
      int64_t(blocks_.size() * sizeof(Block)) + int64_t(map_.size()) * 32 + int64_t(host_map_.size()) * 48;
  for (const auto& [id, s] : seqs_) b += int64_t((s.pages.size() + s.held.size()) * 4 + s.keys.size() * 8);
  return b;
}

void VllmCache::check_invariants() const {
  std::vector<int32_t> refs(blocks_.size(), 0);
  for (const auto& [id, s] : seqs_) {
    for (int32_t b : s.pages)
      if (b >= 0) ++refs[size_t(b)];
    for (int32_t b : s.held) ++refs[size_t(b)];
    for (const auto& [p, bl] : s.planned)
      for (int32_t b : bl) ++refs[size_t(b)];
  }
  int64_t n = 0;
  for (int32_t b = head_, prev = -1; b >= 0; prev = b, b = blocks_[size_t(b)].next) {
    DS_CHECK(blocks_[size_t(b)].in_free && blocks_[size_t(b)].prev == prev,
             "vllm cache: free queue broken at {}", b);
    ++n;
  }
  DS_CHECK(n == n_free_, "vllm cache: free queue holds {} blocks, counter says {}", n, n_free_);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const Block& blk = blocks_[b];
    DS_CHECK(blk.ref == refs[b], "vllm cache: block {} refcount {} but {} holders", b, blk.ref, refs[b]);
    DS_CHECK(blk.in_free == (blk.ref == 0), "vllm cache: block {} ref {} but in_free {}", b, blk.ref,
             blk.in_free);
    if (blk.key != 0) {
      auto it = map_.find(blk.key);
      DS_CHECK(it != map_.end(), "vllm cache: block {} cached key missing from the map", b);
    }
  }
  for (const auto& [k, b] : map_)
    DS_CHECK(blocks_[size_t(b)].key == k, "vllm cache: map entry points at block {} with another key", b);
}

}  // namespace ds
