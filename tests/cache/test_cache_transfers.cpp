// What the cache hands an executor: cached pages are verified token by token (a forced 64-bit key
// collision costs a miss, never a wrong hit), checkpoint slots are allocated when a step is
// planned and kept or dropped at commit, and every copy its decisions imply is logged in order.
#include <gtest/gtest.h>

#include "cache/hybrid_cache.h"
#include "cache_test_util.h"
#include "core/hash.h"

namespace ds {
namespace {

using test::concat;
using test::iota_tokens;
using test::run_request;
using test::small_config;

// A page different from `page` whose hash has the same low `bits` bits.
std::vector<int32_t> colliding_page(const std::vector<int32_t>& page, int bits) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  std::vector<int32_t> other = page;
  for (int32_t v = 1000;; ++v) {
    other[0] = v;
    if ((hash_page(other) & mask) == (hash_page(page) & mask)) return other;
  }
}

TEST(CacheTokens, ForcedKeyCollisionIsAMissNotAWrongHit) {
  CacheConfig cfg = small_config("every-block", "leaf-lru", 1 << 20);
  cfg.page_hash_bits = 2;  // test hook: one page in four collides
  HybridCache cache(cfg);
  const auto a = iota_tokens(0, 9);  // pages [0..3], [4..7] + one token
  run_request(cache, a);
  const auto b_page = colliding_page(iota_tokens(0, 4), 2);
  ASSERT_NE(b_page, iota_tokens(0, 4));
  const auto b = concat(b_page, iota_tokens(4, 5));  // same key as a's first page, other tokens
  const CacheHit m = cache.match(b);
  EXPECT_EQ(m.n_kv_tokens, 0);
  EXPECT_EQ(m.n_hit_tokens, 0);
  const CacheHit hb = run_request(cache, b);  // computed cold; its pages cannot enter the tree
  EXPECT_EQ(hb.n_hit_tokens, 0);
  EXPECT_GE(cache.stats().hash_collisions, 2);  // at admission and at insertion
  EXPECT_EQ(cache.match(a).n_hit_tokens, 8);    // a's entries are untouched
  EXPECT_EQ(cache.match(b).n_kv_tokens, 0);
  cache.check_invariants();
}

TEST(CacheTokens, ManyCollisionsNeverChangeWhatAHitMeans) {
  CacheConfig cfg = small_config("every-block", "leaf-lru", 1 << 20);
  cfg.page_hash_bits = 1;
  HybridCache cache(cfg);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 40; ++i) {
    std::vector<int32_t> p = iota_tokens(0, 4);  // a shared first page, then pages that differ
    for (int k = 0; k < 3; ++k) p = concat(p, iota_tokens(100 * i + 10 * k, 4));
    p.push_back(7);
    prompts.push_back(p);
  }
  for (const auto& p : prompts) run_request(cache, p);
  for (const auto& p : prompts) {
    // A hit of h tokens must mean: some earlier prompt had exactly these first h tokens.
    const CacheHit h = cache.match(p);
    bool seen = h.n_hit_tokens == 0;
    for (const auto& q : prompts) seen = seen || std::equal(p.begin(), p.begin() + h.n_hit_tokens, q.begin());
    EXPECT_TRUE(seen);
  }
  EXPECT_GT(cache.stats().hash_collisions, 0);
  EXPECT_GT(cache.match(prompts[5]).n_hit_tokens, 0);  // verified hits still happen
}

TEST(CacheTransfers, CheckpointSlotsArePlannedThenKeptOrDropped) {
  HybridCache cache(small_config("every-block", "leaf-lru", 1 << 20));
  const auto p = iota_tokens(0, 13);
  auto a = cache.admit(p);
  auto b = cache.admit(p);  // same prompt, computed concurrently
  ASSERT_TRUE(a && b && cache.reserve(a->seq, 13) && cache.reserve(b->seq, 13));
  const auto pa = cache.plan_checkpoints(a->seq, 0, 13);
  const auto pb = cache.plan_checkpoints(b->seq, 0, 13);
  ASSERT_EQ(pa.size(), 3u);                                   // 4, 8, 12
  EXPECT_EQ(cache.stats().tiers[0].checkpoint_bytes, 6 * 4);  // charged when planned
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_NE(pa[i].slot, pb[i].slot);
  cache.check_invariants();
  const CommitReport ra = cache.commit(a->seq, p, 13);
  EXPECT_EQ(ra.kept, (std::vector<int64_t>{4, 8, 12}));
  EXPECT_EQ(ra.n_pages_inserted, 3);
  const CommitReport rb = cache.commit(b->seq, p, 13);  // a's nodes already have them
  EXPECT_EQ(rb.dropped, (std::vector<int64_t>{4, 8, 12}));
  EXPECT_EQ(rb.n_pages_inserted, 0);
  EXPECT_EQ(cache.stats().tiers[0].checkpoint_bytes, 3 * 4);
  EXPECT_EQ(cache.stats().checkpoints_duplicate, 3);
  cache.abort(a->seq);
  cache.abort(b->seq);
  cache.check_invariants();
}

TEST(CacheTransfers, AbortFreesPlannedSlots) {
  HybridCache cache(small_config("every-block", "leaf-lru", 1 << 20));
  auto a = cache.admit(iota_tokens(0, 13));
  ASSERT_TRUE(a && cache.reserve(a->seq, 13));
  EXPECT_EQ(cache.plan_checkpoints(a->seq, 0, 13).size(), 3u);
  cache.abort(a->seq);
  EXPECT_EQ(cache.stats().tiers[0].checkpoint_bytes, 0);
  cache.check_invariants();
}

TEST(CacheTransfers, DemotionPromotionAndRestoreAreLoggedInOrder) {
  // Device: 3 pages + 2 checkpoints; host: plenty. prompt-end checkpoints.
  HybridCache cache(small_config("prompt-end", "leaf-lru", 3 * 4 + 2 * 4, 1 << 20));
  const auto a = iota_tokens(0, 9), b = iota_tokens(100, 9);
  run_request(cache, a);
  EXPECT_TRUE(cache.take_transfers().empty());  // nothing moved yet
  run_request(cache, b);                        // pushes a's pages and checkpoint to the host
  std::vector<CacheTransfer> t = cache.take_transfers();
  int demoted_pages = 0, demoted_ckpts = 0;
  for (const CacheTransfer& x : t) {
    EXPECT_EQ(x.src_tier, 0);
    EXPECT_EQ(x.dst_tier, 1);
    demoted_pages += x.kind == TransferKind::Page;
    demoted_ckpts += x.kind == TransferKind::Checkpoint;
  }
  EXPECT_GE(demoted_pages, 1);
  auto adm = cache.admit(concat(a, iota_tokens(50, 3)));  // hits a from the host tier
  ASSERT_TRUE(adm);
  EXPECT_EQ(adm->hit.n_hit_tokens, 8);
  EXPECT_TRUE(adm->hit.checkpoint_on_host || demoted_ckpts == 0);
  t = cache.take_transfers();
  ASSERT_FALSE(t.empty());
  // The restore reads the hit checkpoint into the new live slot; promotions bring pages back.
  const CacheTransfer& restore = t.back();
  EXPECT_EQ(restore.kind, TransferKind::Restore);
  EXPECT_EQ(restore.dst, cache.live_slot(adm->seq));
  EXPECT_EQ(restore.src_tier, adm->restore_from.tier);
  EXPECT_EQ(restore.src, adm->restore_from.slot);
  int promoted = 0;
  for (const CacheTransfer& x : t)
    if (x.kind == TransferKind::Page && x.src_tier == 1) {
      ++promoted;
      EXPECT_EQ(x.dst_tier, 0);
    }
  EXPECT_EQ(promoted * 4, adm->hit.n_hit_host_tokens);
  cache.abort(adm->seq);
  cache.check_invariants();
}

}  // namespace
}  // namespace ds
