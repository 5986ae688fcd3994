// The emulated engine caches behind HybridCache (cache_model "vllm" and "sglang"): exact hits,
// evictions and accounting on tiny pools (page = 4 tokens, 4 bytes a block / page / state).
#include <gtest/gtest.h>

#include "cache/hybrid_cache.h"
#include "cache_test_util.h"
#include "core/check.h"

namespace ds {
namespace {

using test::concat;
using test::iota_tokens;
using test::prefix;
using test::run_request;

CacheConfig vllm_config(int64_t blocks, int64_t retention_interval = 0, int64_t host_blocks = 0,
                        int groups = 1) {
  CacheConfig c =
      test::small_config("vllm:0", "vllm-lru", blocks * 4, host_blocks > 0 ? host_blocks * 4 : -1);
  c.cache_model = "vllm";
  c.vllm.num_blocks = blocks;
  c.vllm.kda_groups = groups;
  c.vllm.live_blocks = 2 * groups;
  c.vllm.retention_interval = retention_interval;
  c.vllm.host_blocks = host_blocks;
  c.vllm.block_bytes = 4;
  return c;
}

CacheConfig sglang_config(int64_t pages, int64_t slots, int64_t track_interval = 8) {
  CacheConfig c = test::small_config("sglang", "sglang-lru", pages * 4);
  c.cache_model = "sglang";
  c.sglang.kv_pages = pages;
  c.sglang.state_slots = slots;
  c.sglang.track_interval = track_interval;
  c.sglang.track_chunk = 4;
  c.sglang.page_bytes = 4;
  c.sglang.state_bytes = 4;
  return c;
}

// ---- vLLM ------------------------------------------------------------------------------------

TEST(VllmCache, HitIsTheIntersectionAtTheLatestReplayBoundary) {
  HybridCache cache(vllm_config(64));
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 2);
  EXPECT_EQ(run_request(cache, a, out).n_hit_tokens, 0);
  // Attention blocks 0..4 are cached (20 computed tokens); the only state is at the prompt's last
  // block boundary, 16 (retention 0: no decode checkpoint).
  const CacheHit next = cache.match(concat(concat(a, out), iota_tokens(900, 5)));
  EXPECT_EQ(next.n_kv_tokens, 20);
  EXPECT_EQ(next.n_hit_tokens, 16);
  EXPECT_EQ(next.n_lost_tokens, 4);
  EXPECT_EQ(cache.match(a).n_hit_tokens, 16);
  EXPECT_EQ(cache.stats().checkpoints_created, 1);
  cache.check_invariants();
}

// The key chains of looked-up prompts are memoised; a buffer rewritten in place (same address, same
// length) must be looked up by its new contents.
TEST(VllmCache, LookupFollowsAPromptBufferRewrittenInPlace) {
  HybridCache cache(vllm_config(64));
  const auto a = iota_tokens(100, 18);
  run_request(cache, a);
  std::vector<int32_t> buf = a;
  EXPECT_EQ(cache.match(buf).n_hit_tokens, 16);
  buf[5] = 7777;  // block 1 differs: only block 0 matches, and it has no state
  EXPECT_EQ(cache.match(buf).n_hit_tokens, 0);
  EXPECT_EQ(cache.match(buf).n_kv_tokens, 4);
  buf = a;
  EXPECT_EQ(cache.match(buf).n_hit_tokens, 16);
}

TEST(VllmCache, SharedPrefixJunctionGetsAState) {
  HybridCache cache(vllm_config(64));
  const auto a = iota_tokens(100, 18);
  run_request(cache, a);
  const auto b = concat(prefix(a, 10), iota_tokens(700, 9));  // shares 2 blocks, no state at 8 yet
  const CacheHit hb = run_request(cache, b);
  EXPECT_EQ(hb.n_kv_tokens, 8);
  EXPECT_EQ(hb.n_hit_tokens, 0);
  const auto c = concat(prefix(a, 10), iota_tokens(800, 9));
  EXPECT_EQ(cache.match(c).n_hit_tokens, 8);  // the junction state B retained
}

TEST(VllmCache, RetentionIntervalAddsStatesOnTheGrid) {
  HybridCache cache(vllm_config(64, /*retention_interval=*/8));
  const auto a = iota_tokens(100, 30);
  run_request(cache, a);
  EXPECT_EQ(cache.stats().checkpoints_created, 4);  // 8, 16, 24 and the tail 28
  EXPECT_EQ(cache.match(concat(prefix(a, 26), iota_tokens(900, 4))).n_hit_tokens, 24);
}

// Blocks are freed tail first into one LRU queue: a small unrelated request takes A's last
// attention blocks, and A's state at 16 is then unreachable although the state block survives.
TEST(VllmCache, TailFirstFreeQueueEvictsInteriorOfTheCachedPrefix) {
  HybridCache cache(vllm_config(8));  // A: 5 pages + 2 live + 1 state = the whole pool
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 2);
  run_request(cache, a, out);
  const auto a_next = concat(concat(a, out), iota_tokens(900, 5));
  EXPECT_EQ(cache.match(a_next).n_hit_tokens, 16);
  auto x = cache.admit(iota_tokens(5000, 3));  // live state: 2 blocks from the head = A's blocks 4, 3
  ASSERT_TRUE(x);
  ASSERT_TRUE(cache.reserve(x->seq, 3));  // one more: A's block 2
  cache.check_invariants();
  const CacheHit h = cache.match(a_next);
  EXPECT_EQ(h.n_kv_tokens, 8);
  EXPECT_EQ(h.n_hit_tokens, 0);
  EXPECT_EQ(cache.stats().pages_dropped, 3);
  cache.abort(x->seq);
  cache.check_invariants();
}

TEST(VllmCache, AdmissionNeedsTheWholePromptInFreeBlocks) {
  HybridCache cache(vllm_config(8));
  EXPECT_FALSE(cache.admit(iota_tokens(0, 40)));  // 10 blocks + 2 live > 8
  EXPECT_EQ(cache.stats().failed_admissions, 1);
  EXPECT_TRUE(cache.admit(iota_tokens(0, 24)));  // 6 + 2
  cache.check_invariants();
}

TEST(VllmCache, HostTierServesWhatTheDeviceEvicted) {
  HybridCache cache(vllm_config(12, 0, /*host_blocks=*/64));
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 2);
  run_request(cache, a, out);
  run_request(cache, iota_tokens(5000, 40));  // 10 blocks + 2 live: evicts all of A from the device
  const auto a_next = concat(concat(a, out), iota_tokens(900, 5));
  const CacheHit h = cache.match(a_next);
  EXPECT_EQ(h.n_hit_tokens, 16);
  EXPECT_EQ(h.n_hit_host_tokens, 16);
  EXPECT_GT(h.bytes_to_load, 0);
  const CacheHit adm = run_request(cache, a_next);
  EXPECT_EQ(adm.n_hit_tokens, 16);
  EXPECT_EQ(cache.stats().tiers[1].hit_tokens, 16);
  cache.check_invariants();
}

TEST(VllmCache, EveryKdaGroupNeedsItsStateBlock) {
  HybridCache cache(vllm_config(64, 0, 0, /*groups=*/3));
  run_request(cache, iota_tokens(100, 18));
  EXPECT_EQ(cache.stats().checkpoints_created, 1);
  EXPECT_EQ(cache.stats().tiers[0].checkpoint_bytes, 3 * 4);  // one block per group
}

// ---- SGLang ----------------------------------------------------------------------------------

TEST(SglangCache, FinishPublishesTheLastTrackedStateAndFreesTheKvPastIt) {
  HybridCache cache(sglang_config(64, 16));
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 2);
  run_request(cache, a, out);  // prefill tracks 16; no decode length is a multiple of 8 in (18, 20]
  const auto a_next = concat(concat(a, out), iota_tokens(900, 5));
  const CacheHit h = cache.match(a_next);
  EXPECT_EQ(h.n_hit_tokens, 16);
  EXPECT_EQ(h.n_kv_tokens, 16);  // KV of tokens 16..20 was freed at finish
  EXPECT_EQ(cache.stats().checkpoints_created, 1);
  cache.check_invariants();
}

TEST(SglangCache, DecodeTrackingMovesTheStateIntoTheOutput) {
  HybridCache cache(sglang_config(64, 16));
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 8);
  run_request(cache, a, out);  // decode reaches length 24: the tracked state there replaces 16
  EXPECT_EQ(cache.match(concat(concat(a, out), iota_tokens(900, 5))).n_hit_tokens, 24);
  // The next prompt holds other tokens where the output was: no state on the shared path.
  const CacheHit other = cache.match(concat(concat(a, iota_tokens(600, 8)), iota_tokens(900, 5)));
  EXPECT_EQ(other.n_kv_tokens, 16);
  EXPECT_EQ(other.n_hit_tokens, 0);
}

TEST(SglangCache, NonFinalPrefillChunksPublishTheirTrackedStates) {
  HybridCache cache(sglang_config(64, 16));
  const auto p = iota_tokens(100, 40);
  auto adm = cache.admit(p);
  ASSERT_TRUE(adm);
  ASSERT_TRUE(cache.reserve(adm->seq, 41));
  for (int64_t begin : {0, 16, 32}) {
    const int64_t end = std::min<int64_t>(begin + 16, 40);
    const auto planned = cache.plan_checkpoints(adm->seq, begin, end);
    ASSERT_EQ(planned.size(), 1u);
    EXPECT_EQ(planned[0].position, begin + (end - begin - 1) / 4 * 4);  // 12, 28, 36
    cache.commit(adm->seq, p, end);
    cache.check_invariants();
  }
  EXPECT_EQ(cache.stats().checkpoints_created, 2);  // chunk ends 12 and 28; 36 waits for finish
  EXPECT_EQ(cache.match(concat(prefix(p, 30), iota_tokens(900, 8))).n_hit_tokens, 28);
  cache.finish(adm->seq, concat(p, iota_tokens(500, 1)));
  EXPECT_EQ(cache.stats().checkpoints_created, 3);
  EXPECT_EQ(cache.match(concat(p, iota_tokens(900, 8))).n_hit_tokens, 36);
  cache.check_invariants();
}

// States are evicted from any node: a leaf goes with its KV and the tombstone pages above it; the
// shared pages stay while another branch hangs below them.
TEST(SglangCache, StateEvictionRemovesALeafBranchUpToTheFork) {
  HybridCache cache(sglang_config(64, 4));  // one running request (3 slots) + 1
  const auto a = concat(iota_tokens(100, 8), iota_tokens(200, 10));
  const auto b = concat(iota_tokens(100, 8), iota_tokens(300, 10));
  run_request(cache, a);  // state at 16 (prefill track), pages 0..3
  run_request(cache, b);  // shares pages 0, 1; own pages 2, 3 and state at 16
  EXPECT_EQ(cache.stats().tiers[0].checkpoint_bytes, 2 * 4);
  EXPECT_EQ(cache.stats().tiers[0].kv_bytes, 6 * 4);
  auto c = cache.admit(iota_tokens(5000, 6));  // 3 slots: 2 free + A's state (least recent)
  ASSERT_TRUE(c);
  cache.check_invariants();
  EXPECT_EQ(cache.stats().checkpoints_dropped, 1);
  EXPECT_EQ(cache.stats().pages_dropped, 2);  // A's pages 3 and 2 (a tombstone left as a leaf)
  EXPECT_EQ(cache.match(a).n_hit_tokens, 0);
  EXPECT_EQ(cache.match(a).n_kv_tokens, 8);
  EXPECT_EQ(cache.match(b).n_hit_tokens, 16);
  cache.abort(c->seq);
  cache.check_invariants();
}

TEST(SglangCache, KvEvictionTakesTheLeastRecentlyUsedLeaf) {
  HybridCache cache(sglang_config(10, 16));
  const auto a = iota_tokens(100, 18), b = iota_tokens(300, 18);
  run_request(cache, a);  // 4 tree pages
  run_request(cache, b);  // 4 more
  EXPECT_EQ(cache.match(a).n_hit_tokens, 16);
  run_request(cache, concat(prefix(a, 16), iota_tokens(900, 2)));  // a hit refreshes A's path
  run_request(cache, iota_tokens(5000, 14));                       // needs 4 pages: B (least recent) goes
  EXPECT_EQ(cache.match(a).n_hit_tokens, 16);
  EXPECT_EQ(cache.match(b).n_hit_tokens, 0);
  cache.check_invariants();
}

TEST(SglangCache, AdmissionNeedsPagesAndThreeSlots) {
  HybridCache cache(sglang_config(8, 4));
  auto first = cache.admit(iota_tokens(0, 10));
  ASSERT_TRUE(first);
  EXPECT_FALSE(cache.admit(iota_tokens(100, 10)));  // 1 slot left
  EXPECT_FALSE(cache.admit(iota_tokens(0, 60)));    // 15 pages > 8
  EXPECT_EQ(cache.stats().failed_admissions, 2);
  cache.abort(first->seq);
  cache.check_invariants();
}

TEST(CacheEmulation, UnknownModelAndHostTierAreRejected) {
  CacheConfig c = sglang_config(8, 4);
  c.cache_model = "trtllm";
  EXPECT_THROW(HybridCache{c}, Error);
  CacheConfig h = sglang_config(8, 4);
  h.tiers.push_back({"dram", 64, 1, 1});
  EXPECT_THROW(HybridCache{h}, Error);
}

}  // namespace
}  // namespace ds
