// HybridCache scenarios with exact hit lengths and exact evictions (page = 4 tokens, 1 byte per KV
// token, so a page is 4 bytes; checkpoints 4 bytes unless stated).
#include <gtest/gtest.h>

#include <map>

#include "cache/hybrid_cache.h"
#include "cache_test_util.h"
#include "core/check.h"

namespace ds {
namespace {

using test::concat;
using test::iota_tokens;
using test::prefix;
using test::run_request;
using test::small_config;

TEST(HybridCache, EveryBlockHitsLongestRestorablePrefix) {
  HybridCache cache(small_config("every-block", "leaf-lru", 1 << 20));
  const auto a = iota_tokens(100, 18), out = iota_tokens(500, 2);
  const CacheHit first = run_request(cache, a, out);
  EXPECT_EQ(first.n_hit_tokens, 0);
  EXPECT_EQ(cache.stats().pages_inserted, 5);       // 20 tokens computed -> 5 full pages
  EXPECT_EQ(cache.stats().checkpoints_created, 5);  // 4, 8, 12, 16 (prompt) and 20 (decode)

  const CacheHit same = cache.match(a);  // at least one token is recomputed: pages inside [0, 17)
  EXPECT_EQ(same.n_kv_tokens, 16);
  EXPECT_EQ(same.n_hit_tokens, 16);
  EXPECT_EQ(same.n_lost_tokens, 0);
  const CacheHit next_turn = cache.match(concat(concat(a, out), iota_tokens(900, 5)));
  EXPECT_EQ(next_turn.n_hit_tokens, 20);
  const CacheHit diverged = cache.match(concat(prefix(a, 10), iota_tokens(700, 8)));
  EXPECT_EQ(diverged.n_kv_tokens, 8);
  EXPECT_EQ(diverged.n_hit_tokens, 8);
  EXPECT_EQ(cache.match(iota_tokens(0, 30)).n_kv_tokens, 0);
  EXPECT_EQ(same.n_hit_device_tokens, 16);
  EXPECT_EQ(same.bytes_to_load, 0);
}

struct MultiTurnCase {
  const char* retention;
  int64_t hit, kv;
};

class MultiTurn : public ::testing::TestWithParam<MultiTurnCase> {};

// Turn 2's prompt = turn 1's prompt (20) + output (6) + 10 new tokens. 24 tokens of KV exist.
TEST_P(MultiTurn, NextPromptExtendsPreviousPromptAndOutput) {
  const MultiTurnCase c = GetParam();
  HybridCache cache(small_config(c.retention, "leaf-lru", 1 << 20));
  const auto p1 = iota_tokens(0, 20), o1 = iota_tokens(1000, 6);
  run_request(cache, p1, o1);
  const auto p2 = concat(concat(p1, o1), iota_tokens(2000, 10));
  const CacheHit h = run_request(cache, p2);
  EXPECT_EQ(h.n_hit_tokens, c.hit);
  EXPECT_EQ(h.n_kv_tokens, c.kv);
  EXPECT_EQ(h.n_lost_tokens, c.kv - c.hit);
  EXPECT_EQ(cache.stats().hit_tokens, c.hit);
  EXPECT_EQ(cache.stats().lost_tokens, c.kv - c.hit);
  EXPECT_EQ(cache.stats().prompt_tokens, 20 + 36);
}

INSTANTIATE_TEST_SUITE_P(
    Retention, MultiTurn,
    ::testing::Values(MultiTurnCase{"every-block", 24, 24},
                      MultiTurnCase{"interval:16", 20, 24},  // prompt end 20; no multiple of 16 in (20, 26]
                      MultiTurnCase{"prompt-end", 20, 24},
                      MultiTurnCase{"semantic", 24, 24},  // last decoded token (26 -> 24)
                      MultiTurnCase{"none", 0, 24}),
    [](const auto& info) {
      std::string n = info.param.retention;
      for (char& ch : n)
        if (ch == ':' || ch == '-') ch = '_';
      return n;
    });

TEST(HybridCache, SemanticCheckpointsTheBranchPointOfASharedSystemPrompt) {
  HybridCache cache(small_config("semantic", "leaf-lru", 1 << 20));
  const auto sys = iota_tokens(0, 16);
  const auto a = concat(sys, iota_tokens(100, 8)), b = concat(sys, iota_tokens(200, 8)),
             c = concat(sys, iota_tokens(300, 8));
  run_request(cache, a, iota_tokens(150, 4));  // decode-end checkpoint at 28 only
  const CacheHit hb = cache.match(b);
  EXPECT_EQ(hb.n_kv_tokens, 16);
  EXPECT_EQ(hb.n_hit_tokens, 0);
  EXPECT_EQ(hb.n_lost_tokens, 16);

  auto adm = cache.admit(b);
  ASSERT_TRUE(adm);
  ASSERT_TRUE(cache.reserve(adm->seq, 24));
  // The branch point, and the decode-end candidate at the last page boundary computed.
  const auto planned = cache.plan_checkpoints(adm->seq, 0, 24);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0].position, 16);
  EXPECT_EQ(planned[1].position, 24);
  cache.check_invariants();
  const CommitReport rep = cache.commit(adm->seq, b, 24);
  EXPECT_EQ(rep.kept, (std::vector<int64_t>{16}));
  cache.finish(adm->seq, b);
  cache.check_invariants();
  EXPECT_EQ(cache.match(c).n_hit_tokens, 16);       // a third branch restores the shared prefix
  EXPECT_EQ(cache.stats().checkpoints_created, 3);  // 28 (A end), 16 (branch), 24 (B end)
}

TEST(HybridCache, LeafLruEvictsTheOldestLeafFirstUnderPressure) {
  // 6 pages of device memory, free checkpoints.
  HybridCache cache(small_config("every-block", "leaf-lru", 24, -1, /*ckpt_bytes=*/0));
  const auto x = iota_tokens(0, 9), y = iota_tokens(100, 9), z = iota_tokens(200, 13);
  run_request(cache, x);  // 2 pages cached (partial third page dropped)
  run_request(cache, y);  // 2 more
  EXPECT_EQ(cache.stats().tiers[0].kv_bytes, 16);
  run_request(cache, z);  // needs 4 pages: evicts x's two pages (oldest), leaf first
  EXPECT_EQ(cache.match(x).n_kv_tokens, 0);
  EXPECT_EQ(cache.match(y).n_hit_tokens, 8);
  EXPECT_EQ(cache.match(z).n_hit_tokens, 12);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 2);
  EXPECT_EQ(cache.stats().pages_dropped, 2);
  EXPECT_EQ(cache.stats().tiers[0].kv_bytes, 20);
}

// A and Y each cache 2 pages + checkpoints at 4 and 8 (16 bytes each). A is hit again at 8, which
// refreshes A's pages and the checkpoint it consumed. Then one 4-byte unit must go.
void consumed_vs_path_scenario(HybridCache& cache, const std::vector<int32_t>& a,
                               const std::vector<int32_t>& y) {
  run_request(cache, a);
  run_request(cache, y);
  EXPECT_EQ(run_request(cache, a).n_hit_tokens, 8);
  auto z = cache.admit(iota_tokens(200, 5));
  ASSERT_TRUE(z);
  ASSERT_TRUE(cache.reserve(z->seq, 5));  // 2 pages, 4 bytes short
  cache.check_invariants();
}

TEST(HybridCache, ConsumedStateLruDropsTheUnconsumedCheckpointKeepingKv) {
  HybridCache cache(small_config("every-block", "consumed-state-lru", 36));
  const auto a = iota_tokens(0, 9), y = iota_tokens(100, 9);
  consumed_vs_path_scenario(cache, a, y);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::CheckpointDropped), 1);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 0);
  const CacheHit short_a = cache.match(concat(prefix(a, 5), iota_tokens(900, 4)));
  EXPECT_EQ(short_a.n_kv_tokens, 4);  // A's checkpoint at 4 was never consumed: dropped, KV kept
  EXPECT_EQ(short_a.n_hit_tokens, 0);
  EXPECT_EQ(cache.match(a).n_hit_tokens, 8);
  EXPECT_EQ(cache.match(y).n_hit_tokens, 8);
}

TEST(HybridCache, LeafLruDropsTheOldestLeafWithItsCheckpoint) {
  HybridCache cache(small_config("every-block", "leaf-lru", 36));
  const auto a = iota_tokens(0, 9), y = iota_tokens(100, 9);
  consumed_vs_path_scenario(cache, a, y);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 1);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::CheckpointDropped), 0);
  EXPECT_EQ(cache.stats().checkpoints_dropped, 1);  // went with its page
  EXPECT_EQ(cache.match(y).n_kv_tokens, 4);
  EXPECT_EQ(cache.match(y).n_hit_tokens, 4);
  EXPECT_EQ(cache.match(a).n_hit_tokens, 8);
}

struct ValueCase {
  const char* eviction;
  bool keeps_long;  // true: the long (32-token replay) checkpoint survives, the short one goes
};

class ValueEviction : public ::testing::TestWithParam<ValueCase> {};

// X: 33-token prompt, checkpoint at 32 (replay 32). Y (newer): 5 tokens, checkpoint at 4 (replay 4).
TEST_P(ValueEviction, ValueVersusRecency) {
  const ValueCase c = GetParam();
  HybridCache cache(small_config("prompt-end", c.eviction, 48));
  const auto x = iota_tokens(0, 33), y = iota_tokens(100, 5);
  run_request(cache, x);
  run_request(cache, y);
  EXPECT_EQ(cache.stats().tiers[0].total_bytes(), 44);
  auto z = cache.admit(iota_tokens(200, 5));
  ASSERT_TRUE(z);
  ASSERT_TRUE(cache.reserve(z->seq, 5));
  cache.check_invariants();
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::CheckpointDropped), 1);
  EXPECT_EQ(cache.match(x).n_kv_tokens, 32);
  EXPECT_EQ(cache.match(x).n_hit_tokens, c.keeps_long ? 32 : 0);
  EXPECT_EQ(cache.match(y).n_kv_tokens, 4);
  EXPECT_EQ(cache.match(y).n_hit_tokens, c.keeps_long ? 0 : 4);
  cache.abort(z->seq);
  cache.check_invariants();
}

INSTANTIATE_TEST_SUITE_P(Policies, ValueEviction,
                         ::testing::Values(ValueCase{"flop-per-byte:1000", true},
                                           ValueCase{"flop-per-byte:0", false}, ValueCase{"seglen:0", true},
                                           ValueCase{"seglen:1", false}),
                         [](const auto& info) {
                           std::string n = info.param.eviction;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(HybridCache, DeviceEvictionDemotesToHostAndHostHitReportsBytesToLoad) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 16, 100));
  const auto a = iota_tokens(0, 9), b = iota_tokens(100, 9);
  run_request(cache, a);  // 2 pages + checkpoint at 8 = 12 bytes on the device
  run_request(cache, b);  // pushes both of A's pages (and its checkpoint) to the host
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDemoted), 2);
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 0);
  EXPECT_EQ(cache.stats().tiers[1].kv_bytes, 8);
  EXPECT_EQ(cache.stats().tiers[1].checkpoint_bytes, 4);

  const CacheHit h = cache.match(a);
  EXPECT_EQ(h.n_hit_tokens, 8);
  EXPECT_EQ(h.n_hit_host_tokens, 8);
  EXPECT_EQ(h.n_hit_device_tokens, 0);
  EXPECT_TRUE(h.checkpoint_on_host);
  EXPECT_EQ(h.bytes_to_load, 12);
  EXPECT_DOUBLE_EQ(h.load_s, 0.12);  // 12 bytes at 100 B/s

  const CacheHit again = run_request(cache, a);  // promotes A's pages, demotes B's leaf
  EXPECT_EQ(again.n_hit_host_tokens, 8);
  EXPECT_EQ(cache.stats().pages_promoted, 2);
  EXPECT_EQ(cache.stats().tiers[1].hit_tokens, 8);
  EXPECT_EQ(cache.stats().loaded_bytes, 12);
  EXPECT_EQ(cache.match(a).n_hit_device_tokens, 8);
  EXPECT_EQ(cache.match(b).n_hit_tokens, 8);  // still reachable, partly from the host
}

TEST(HybridCache, WithoutHostTierEvictionDrops) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 16));
  run_request(cache, iota_tokens(0, 9));
  run_request(cache, iota_tokens(100, 9));
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 2);
  EXPECT_EQ(cache.match(iota_tokens(0, 9)).n_kv_tokens, 0);
}

// Two multi-turn sessions interleaved in 40 bytes of device memory (prompt-end, leaf-lru): each
// turn's growth evicts the other session's oldest unlocked leaf, never the locked hit path.
TEST(HybridCache, InterleavedSessionsUnderPressure) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 40));
  const auto s1 = iota_tokens(0, 9), o1 = iota_tokens(50, 3);
  const auto s2 = iota_tokens(100, 9), o2 = iota_tokens(150, 3);
  run_request(cache, s1, o1);  // 3 pages + checkpoint at 8: 16 bytes
  run_request(cache, s2, o2);  // 16 more: 32
  const auto s1_turn2 = concat(concat(s1, o1), iota_tokens(60, 5));
  const CacheHit h1 = run_request(cache, s1_turn2, iota_tokens(70, 3));
  EXPECT_EQ(h1.n_kv_tokens, 12);
  EXPECT_EQ(h1.n_hit_tokens, 8);  // the prompt-end checkpoint of turn 1
  // Growth evicted session 1's own unlocked third page (oldest), the new checkpoint at 16 then
  // evicted session 2's third page.
  EXPECT_EQ(cache.stats().n_evictions(EvictReason::KvDropped), 2);
  const CacheHit h2 = cache.match(concat(concat(s2, o2), iota_tokens(160, 5)));
  EXPECT_EQ(h2.n_kv_tokens, 8);
  EXPECT_EQ(h2.n_hit_tokens, 8);
  const CacheHit h1_turn3 = cache.match(concat(concat(s1_turn2, iota_tokens(70, 3)), iota_tokens(80, 4)));
  EXPECT_EQ(h1_turn3.n_kv_tokens, 20);
  EXPECT_EQ(h1_turn3.n_hit_tokens, 16);
}

TEST(HybridCache, LockedEntriesAreNeverEvictedAndReserveReportsNoRoom) {
  HybridCache cache(small_config("every-block", "leaf-lru", 16, -1, 0));
  const auto s1 = iota_tokens(0, 9), s2 = iota_tokens(100, 9);
  auto a1 = cache.admit(s1);
  ASSERT_TRUE(a1 && cache.reserve(a1->seq, 9));
  cache.plan_checkpoints(a1->seq, 0, 9);
  cache.commit(a1->seq, s1, 9);
  auto a2 = cache.admit(s2);
  ASSERT_TRUE(a2);
  EXPECT_FALSE(cache.reserve(a2->seq, 9));  // 12 bytes wanted, 4 free, everything else locked
  EXPECT_EQ(cache.stats().failed_reserves, 1);
  EXPECT_EQ(cache.match(s1).n_kv_tokens, 8);
  cache.check_invariants();
  cache.abort(a1->seq);  // committed pages stay cached, now unlocked
  EXPECT_EQ(cache.match(s1).n_hit_tokens, 8);
  EXPECT_TRUE(cache.reserve(a2->seq, 9));  // 12 bytes wanted, 8 free: evicts s1's leaf page
  EXPECT_EQ(cache.match(s1).n_kv_tokens, 4);
  cache.abort(a2->seq);
  cache.check_invariants();
  EXPECT_EQ(cache.n_running(), 0);
}

TEST(HybridCache, RestoreIsCopyOnWriteConcurrentHitsShareTheCheckpoint) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 1 << 20, -1, 4, /*live_bytes=*/8));
  const auto p = iota_tokens(0, 9);
  run_request(cache, p);
  auto a = cache.admit(p), b = cache.admit(p);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->hit.n_hit_tokens, 8);
  EXPECT_EQ(b->hit.n_hit_tokens, 8);
  EXPECT_NE(cache.live_slot(a->seq), cache.live_slot(b->seq));
  EXPECT_EQ(cache.page_table(a->seq)[0], cache.page_table(b->seq)[0]);  // shared KV page
  EXPECT_EQ(cache.stats().checkpoints_used, 2);
  EXPECT_EQ(cache.stats().tiers[0].live_bytes, 16);
  cache.check_invariants();
  cache.abort(a->seq);
  cache.abort(b->seq);
  EXPECT_EQ(cache.match(p).n_hit_tokens, 8);  // the checkpoint itself was not consumed
  EXPECT_EQ(cache.stats().tiers[0].live_bytes, 0);
}

TEST(HybridCache, AdmissionFailsWhenTheLiveStateDoesNotFit) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 12, -1, 4, /*live_bytes=*/8));
  auto a = cache.admit(iota_tokens(0, 5));
  ASSERT_TRUE(a);
  EXPECT_FALSE(cache.admit(iota_tokens(100, 5)));
  EXPECT_EQ(cache.stats().failed_admissions, 1);
  EXPECT_EQ(cache.n_running(), 1);
  cache.check_invariants();
}

TEST(HybridCache, RefusedAdmissionReportsTheHitAMatchFinds) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 24, -1, 4, /*live_bytes=*/8));
  const auto p = iota_tokens(0, 9);
  run_request(cache, p);  // 2 pages + the prompt-end checkpoint: 12 of 24 bytes
  auto a = cache.admit(iota_tokens(100, 5));
  ASSERT_TRUE(a);  // its live state leaves 4 bytes, and p's path is locked while p is admitted
  CacheHit refused;
  EXPECT_FALSE(cache.admit(p, &refused));
  EXPECT_EQ(refused.n_hit_tokens, 8);
  EXPECT_EQ(refused.n_kv_tokens, cache.match(p).n_kv_tokens);
  EXPECT_EQ(refused.n_hit_tokens, cache.match(p).n_hit_tokens);
  cache.abort(a->seq);
  ASSERT_TRUE(cache.admit(p, &refused));
  cache.check_invariants();
}

// KV past a path's deepest checkpoint can never be restored from: boundary-aware drops those
// stranded pages first, where leaf-LRU takes the oldest session's tail and with it its hit.
TEST(HybridCache, BoundaryAwareEvictionDropsStrandedPagesFirst) {
  for (const char* eviction : {"leaf-lru", "boundary-aware"}) {
    SCOPED_TRACE(eviction);
    HybridCache cache(small_config("prompt-end", eviction, 52));
    const auto b = iota_tokens(300, 18), a = iota_tokens(100, 18);
    run_request(cache, b);                       // 4 pages + checkpoint at 16: 20 bytes
    run_request(cache, a, iota_tokens(500, 6));  // 6 pages (16..24 past the checkpoint) + checkpoint: 28
    run_request(cache, iota_tokens(900, 8));     // 2 pages + checkpoint: 12 bytes, 4 free
    const bool ours = std::string(eviction) == "boundary-aware";
    EXPECT_EQ(cache.match(concat(b, iota_tokens(700, 4))).n_hit_tokens, ours ? 16 : 0);
    EXPECT_EQ(cache.match(concat(a, iota_tokens(700, 4))).n_hit_tokens, 16);
    cache.check_invariants();
  }
}

// Under overload the waiting queue is admitted in arrival order: boundary-aware:queue keeps the path
// of an announced (waiting) request over more recently used paths, where plain boundary-aware (LRU)
// evicts it first;
// admission clears the announcement. boundary-aware:queue-overload ignores an arrival while the cache
// is not overloaded (no evicted path has come back yet), so here it evicts as plain boundary-aware.
TEST(HybridCache, BoundaryAwareKeepsTheWaitingRequestsPath) {
  for (const char* eviction : {"boundary-aware", "boundary-aware:queue", "boundary-aware:queue-overload"}) {
    SCOPED_TRACE(eviction);
    HybridCache cache(small_config("prompt-end", eviction, 44));
    const auto a = iota_tokens(100, 18), b = iota_tokens(300, 18), c = iota_tokens(500, 14);
    run_request(cache, a);  // 4 pages + checkpoint at 16: 20 bytes
    run_request(cache, b);  // 20 bytes (24 while running): 4 free
    const auto next_a = concat(a, iota_tokens(700, 8));
    cache.announce(next_a);  // a's next turn waits (a is the least recently used path)
    run_request(cache, c);   // 4 pages + checkpoint at 12: evicts a (LRU) or b (a is announced)
    const bool ours = std::string(eviction) == "boundary-aware:queue";
    EXPECT_EQ(cache.match(next_a).n_hit_tokens, ours ? 16 : 0);
    EXPECT_EQ(cache.match(concat(b, iota_tokens(700, 4))).n_hit_tokens, ours ? 0 : 16);
    run_request(cache, next_a);  // admitted: a's path is an ordinary LRU path again
    cache.check_invariants();
  }
}

// A request whose prompt cannot get room even after evicting every unlocked entry evicts nothing
// (the cache refuses up front, as vLLM's allocator does): the cached paths survive its wait.
TEST(HybridCache, ARequestThatCannotFitEvictsNothing) {
  HybridCache cache(small_config("prompt-end", "leaf-lru", 40));
  const auto a = iota_tokens(100, 18);
  run_request(cache, a);  // 4 pages + checkpoint at 16: 20 bytes cached
  auto b = cache.admit(iota_tokens(300, 10));
  ASSERT_TRUE(b);
  ASSERT_TRUE(cache.reserve(b->seq, 10));  // 3 pages running: 8 bytes free, 20 reclaimable
  auto c = cache.admit(iota_tokens(500, 40));
  ASSERT_TRUE(c);
  EXPECT_FALSE(cache.reserve(c->seq, 40));  // needs 40 bytes > 8 + 20
  cache.abort(c->seq);
  EXPECT_EQ(cache.match(concat(a, iota_tokens(700, 4))).n_hit_tokens, 16);
  EXPECT_GE(cache.stats().room_refusals, 1);
  EXPECT_EQ(cache.stats().pages_dropped, 0);
  cache.check_invariants();
}

// Four sessions take turns over a cache that holds two of their paths while a long request runs:
// LRU evicts every path just before its next turn and hits nothing; boundary-aware detects the
// overload (evicted paths come back within the reuse horizon) and holds a subset of paths back
// from new prompts, so those sessions keep hitting.
TEST(HybridCache, BoundaryAwareHoldsPathsUnderCyclicOverload) {
  std::map<std::string, int64_t> late_hits;
  for (const char* eviction : {"leaf-lru", "boundary-aware"}) {
    SCOPED_TRACE(eviction);
    HybridCache cache(small_config("boundary-aware", eviction, 50));
    auto bg = cache.admit(iota_tokens(9000, 4));  // runs throughout: every admission has company
    ASSERT_TRUE(bg);
    ASSERT_TRUE(cache.reserve(bg->seq, 4));
    for (int round = 0; round < 40; ++round)
      for (int s = 0; s < 4; ++s) {
        // Turn `round` of session s: its 16-token base + one fresh token (hit up to 16).
        const auto prompt = concat(iota_tokens(1000 * (s + 1), 16), {int32_t(100000 + round)});
        const CacheHit hit = run_request(cache, prompt);
        if (round >= 30) late_hits[eviction] += hit.n_hit_tokens;
      }
    cache.check_invariants();
  }
  EXPECT_EQ(late_hits["leaf-lru"], 0);
  EXPECT_GE(late_hits["boundary-aware"], 10 * 16);  // at least one session hits every turn
}

// boundary-aware:queued: under overload a new prompt waits for held bytes only while another request
// is queued behind it. After the cyclic overload above (every arrival announced, as the scheduler
// does), a prompt that needs held bytes is admitted when it waits alone and refused (it waits) when
// another request waits behind it; blocking only ever takes room away.
TEST(HybridCache, BoundaryAwareQueuedBlocksOnlyWithAQueueBehind) {
  auto admitted = [](int prompt_tokens, bool queue_behind) {
    HybridCache cache(small_config("boundary-aware", "boundary-aware:queued", 50));
    const auto bg_prompt = iota_tokens(9000, 4);
    cache.announce(bg_prompt);
    auto bg = cache.admit(bg_prompt);  // runs throughout: every admission has company
    EXPECT_TRUE(bg && cache.reserve(bg->seq, 4));
    for (int round = 0; round < 30; ++round)
      for (int s = 0; s < 4; ++s) {
        const auto prompt = concat(iota_tokens(1000 * (s + 1), 16), {int32_t(100000 + round)});
        cache.announce(prompt);
        run_request(cache, prompt);
      }
    EXPECT_GT(cache.stats().overloaded_admissions, 0);
    if (queue_behind) cache.announce(iota_tokens(70000, 8));
    const auto p = iota_tokens(50000, prompt_tokens);
    cache.announce(p);
    auto a = cache.admit(p);
    const bool ok = a && cache.reserve(a->seq, prompt_tokens);
    cache.check_invariants();
    return ok;
  };
  int alone_only = 0;
  for (int n = 4; n <= 44; n += 4) {
    SCOPED_TRACE(n);
    const bool alone = admitted(n, false), behind = admitted(n, true);
    EXPECT_TRUE(alone || !behind);
    alone_only += alone && !behind;
  }
  EXPECT_GT(alone_only, 0);
}

// boundary-aware's tail state: while prompts leave cached paths inside them (and at the start,
// before the cache has seen a reuse horizon of admissions without one) a long prompt also gets a
// state at the last 32K multiple below its end, so a later prompt that leaves it before its end
// restores up to there; after a horizon (64 admissions) without such a fork it gets none.
TEST(HybridCache, BoundaryAwareTailStateWhilePromptsForkInsidePaths) {
  HybridCache cache(small_config("boundary-aware", "boundary-aware", 400000));
  const auto a = iota_tokens(0, 40000);
  run_request(cache, a);  // the first admission: states at 32768 (tail) and 40000 (prompt end)
  EXPECT_EQ(cache.match(concat(iota_tokens(0, 36000), iota_tokens(900000, 8))).n_hit_tokens, 32768);
  EXPECT_EQ(cache.match(concat(a, iota_tokens(900000, 8))).n_hit_tokens, 40000);
  for (int i = 0; i < 70; ++i) run_request(cache, iota_tokens(1000000 + 100 * i, 8));  // no forks
  const auto c = iota_tokens(2000000, 40000);
  run_request(cache, c);
  EXPECT_EQ(cache.match(concat(iota_tokens(2000000, 36000), iota_tokens(900000, 8))).n_hit_tokens, 0);
  EXPECT_EQ(cache.match(concat(c, iota_tokens(900000, 8))).n_hit_tokens, 40000);
  cache.check_invariants();
}

// With a host tier that holds every demoted path, nothing leaves the cache: boundary-aware's
// overload gate (evicted paths that come back within the reuse horizon) never opens, though the
// device alone is as overloaded as in the test above.
TEST(HybridCache, BoundaryAwareDemotionsAreNotOverload) {
  HybridCache cache(small_config("boundary-aware", "boundary-aware", 50, 1000));
  auto bg = cache.admit(iota_tokens(9000, 4));
  ASSERT_TRUE(bg);
  ASSERT_TRUE(cache.reserve(bg->seq, 4));
  int64_t late_hits = 0;
  for (int round = 0; round < 40; ++round)
    for (int s = 0; s < 4; ++s) {
      const auto prompt = concat(iota_tokens(1000 * (s + 1), 16), {int32_t(100000 + round)});
      const CacheHit hit = run_request(cache, prompt);
      if (round >= 30) late_hits += hit.n_hit_tokens;
    }
  EXPECT_EQ(cache.stats().overloaded_admissions, 0);
  EXPECT_EQ(late_hits, 10 * 4 * 16);  // every session hits every turn, from the host tier
  cache.check_invariants();
}

TEST(HybridCache, ConfigErrorsNameTheField) {
  auto expect_error = [](CacheConfig c, const std::string& needle) {
    try {
      HybridCache cache(c);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  CacheConfig ok = small_config("every-block", "leaf-lru", 100);
  CacheConfig c = ok;
  c.tiers.clear();
  expect_error(c, "tiers");
  c = ok;
  c.tiers.push_back(c.tiers[0]);
  c.tiers.push_back(c.tiers[0]);
  expect_error(c, "tiers");
  c = ok;
  c.tiers[0].capacity_bytes = -1;
  expect_error(c, "capacity_bytes");
  c = ok;
  c.sizes.kv_bytes_per_token = 0;
  expect_error(c, "kv_bytes_per_token");
  c = ok;
  c.page_tokens = 0;
  expect_error(c, "page_tokens");
  c = ok;
  c.retention = "interval:6";
  expect_error(c, "interval:6");
  c = ok;
  c.eviction = "fifo";
  expect_error(c, "fifo");
}

TEST(HybridCache, BadCallsThrowAndLeaveTheCacheConsistent) {
  HybridCache cache(small_config("every-block", "leaf-lru", 100));
  EXPECT_THROW(cache.reserve(42, 10), Error);
  EXPECT_THROW(cache.abort(42), Error);
  auto a = cache.admit(iota_tokens(0, 9));
  ASSERT_TRUE(a);
  EXPECT_THROW(cache.commit(a->seq, iota_tokens(0, 9), 9), Error);  // nothing reserved
  ASSERT_TRUE(cache.reserve(a->seq, 9));
  EXPECT_THROW(cache.commit(a->seq, iota_tokens(0, 9), 10), Error);  // more than the tokens given
  EXPECT_THROW(cache.reserve(a->seq, -1), Error);
  cache.check_invariants();
  EXPECT_EQ(cache.match({}).n_kv_tokens, 0);
}

}  // namespace
}  // namespace ds
