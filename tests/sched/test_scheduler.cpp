// Scheduler unit tests on the real HybridCache with tiny byte sizes: token budget, chunked
// prefill, decode, prefix hits starting at n_computed_tokens, full-prompt hits, preemption by
// recompute, rejection of a request that can never fit.
#include <gtest/gtest.h>

#include <numeric>

#include "cache/hybrid_cache.h"
#include "core/check.h"
#include "sched/scheduler.h"

namespace ds {
namespace {

// 1 byte of KV per token: capacity_bytes is a token budget (minus states/checkpoints).
CacheConfig small_cache(int64_t capacity_bytes, const std::string& retention = "every-block") {
  CacheConfig c;
  c.sizes.kv_bytes_per_token = 1;
  c.sizes.checkpoint_bytes = 8;
  c.sizes.live_state_bytes = 8;
  c.page_tokens = 64;
  c.tiers = {CacheTier{.name = "hbm", .capacity_bytes = capacity_bytes}};
  c.retention = retention;
  c.eviction = "leaf-lru";
  return c;
}

std::vector<int32_t> iota_tokens(int64_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

Request make_request(RequestId id, std::vector<int32_t> tokens, int64_t max_output) {
  Request r;
  r.id = id;
  r.tokens = std::move(tokens);
  r.max_output_tokens = max_output;
  return r;
}

// Runs the scheduler to idle with token id 7 for every sample; returns finished requests by id order.
std::vector<Request> run_to_idle(Scheduler& s, HybridCache& cache, int max_steps = 10000) {
  std::vector<Request> done;
  for (int i = 0; i < max_steps && !s.idle(); ++i) {
    SchedulePlan plan = s.step();
    int64_t n_samples = 0;
    for (const auto& seq : plan.seqs) n_samples += seq.samples ? 1 : 0;
    std::vector<int32_t> sampled(static_cast<size_t>(n_samples), 7);
    StepEvents ev = s.apply(plan, sampled);
    cache.check_invariants();
    for (auto& r : ev.finished) done.push_back(std::move(r));
  }
  EXPECT_TRUE(s.idle());
  std::sort(done.begin(), done.end(), [](const Request& a, const Request& b) { return a.id < b.id; });
  return done;
}

// vLLM's admission gate: with reserve_full_prompt a request is admitted only when its whole prompt
// fits, so a second long prompt waits instead of being admitted on its first chunk and preempted.
TEST(Scheduler, ReserveFullPromptAdmitsOnlyWhatFits) {
  for (bool full : {false, true}) {
    HybridCache cache(small_cache(64 * 40, "prompt-end"));
    Scheduler s(SchedulerConfig{.max_step_tokens = 2048, .reserve_full_prompt = full}, cache);
    s.add(make_request(1, iota_tokens(64 * 24, 0), 4));
    s.add(make_request(2, iota_tokens(64 * 24, 100000), 4));
    SchedulePlan plan = s.step();
    EXPECT_EQ(plan.admitted.size(), full ? 1u : 2u) << "full " << full;
    std::vector<int32_t> sampled;
    for (const auto& q : plan.seqs)
      if (q.samples) sampled.push_back(7);
    s.apply(plan, sampled);
    const auto done = run_to_idle(s, cache);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(s.n_preemptions() == 0, full) << "full " << full;
  }
}

TEST(Scheduler, TokenBudgetSplitsAcrossRequestsInArrivalOrder) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(5000, 0), 4));
  s.add(make_request(2, iota_tokens(5000, 100000), 4));
  s.add(make_request(3, iota_tokens(5000, 200000), 4));
  SchedulePlan plan = s.step();
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.seqs[0].request_id, 1);
  EXPECT_EQ(plan.seqs[0].n_tokens(), 5000);
  EXPECT_TRUE(plan.seqs[0].samples);
  EXPECT_EQ(plan.seqs[1].request_id, 2);
  EXPECT_EQ(plan.seqs[1].n_tokens(), 3192);  // the rest of the budget: a chunk
  EXPECT_FALSE(plan.seqs[1].samples);
  EXPECT_EQ(plan.n_scheduled_tokens, 8192);
  EXPECT_EQ(s.n_waiting(), 1);  // request 3 waits: budget exhausted
  EXPECT_EQ(s.n_running(), 2);
}

TEST(Scheduler, ChunkedPrefillThenDecodeOneTokenPerStep) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(20000, 0), 3));
  std::vector<int64_t> chunk_sizes;
  std::vector<int64_t> begins;
  std::vector<bool> samples;
  while (!s.idle()) {
    SchedulePlan plan = s.step();
    ASSERT_EQ(plan.seqs.size(), 1u);
    chunk_sizes.push_back(plan.seqs[0].n_tokens());
    begins.push_back(plan.seqs[0].begin);
    samples.push_back(plan.seqs[0].samples);
    std::vector<int32_t> sampled(plan.seqs[0].samples ? 1 : 0, 42);
    StepEvents ev = s.apply(plan, sampled);
    if (!ev.finished.empty()) {
      const Request& r = ev.finished[0];
      EXPECT_EQ(r.n_output_tokens, 3);
      EXPECT_EQ(r.n_tokens(), 20003);
      EXPECT_EQ(r.n_computed_tokens, 20002);  // the last sampled token is never computed
      EXPECT_EQ(r.status, RequestStatus::Finished);
    }
  }
  EXPECT_EQ(chunk_sizes, (std::vector<int64_t>{8192, 8192, 3616, 1, 1}));
  EXPECT_EQ(begins, (std::vector<int64_t>{0, 8192, 16384, 20000, 20001}));
  EXPECT_EQ(samples, (std::vector<bool>{false, false, true, true, true}));
  cache.check_invariants();
}

TEST(Scheduler, DecodesShareTheBudgetWithANewPrefill) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({.max_step_tokens = 100, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(50, 0), 10));
  s.add(make_request(2, iota_tokens(50, 1000), 10));
  SchedulePlan p1 = s.step();  // both prompts: 50 + 50
  ASSERT_EQ(p1.n_scheduled_tokens, 100);
  s.apply(p1, std::vector<int32_t>{1, 2});
  s.add(make_request(3, iota_tokens(500, 5000), 10));
  SchedulePlan p2 = s.step();  // two decodes, then a 98-token chunk of request 3
  ASSERT_EQ(p2.seqs.size(), 3u);
  EXPECT_EQ(p2.seqs[0].n_tokens(), 1);
  EXPECT_EQ(p2.seqs[1].n_tokens(), 1);
  EXPECT_EQ(p2.seqs[2].request_id, 3);
  EXPECT_EQ(p2.seqs[2].n_tokens(), 98);
  EXPECT_EQ(p2.admitted, (std::vector<RequestId>{3}));
}

TEST(Scheduler, PrefixHitStartsAtNComputedTokens) {
  HybridCache cache(small_cache(1 << 20, "every-block"));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(1000, 0), 2));
  run_to_idle(s, cache);
  std::vector<int32_t> b = iota_tokens(640, 0);  // shares 10 full pages with request 1
  auto tail = iota_tokens(260, 900000);
  b.insert(b.end(), tail.begin(), tail.end());
  s.add(make_request(2, b, 2));
  SchedulePlan plan = s.step();
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].begin, 640);
  EXPECT_EQ(plan.seqs[0].n_tokens(), 260);
  EXPECT_TRUE(plan.seqs[0].restore_from.valid());
  // every-block: checkpoints at each page boundary the chunk crosses, (640, 900], each in its own slot
  std::vector<int64_t> positions;
  for (const PlannedCheckpoint& c : plan.seqs[0].checkpoints) positions.push_back(c.position);
  EXPECT_EQ(positions, (std::vector<int64_t>{704, 768, 832, 896}));
  s.apply(plan, std::vector<int32_t>{5});
  auto done = run_to_idle(s, cache);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].n_hit_tokens, 640);
  EXPECT_EQ(done[0].n_kv_hit_tokens, 640);
}

TEST(Scheduler, KvWithoutCheckpointIsNotAHit) {
  HybridCache cache(small_cache(1 << 20, "none"));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(1000, 0), 2));
  run_to_idle(s, cache);
  s.add(make_request(2, iota_tokens(1000, 0), 2));
  SchedulePlan plan = s.step();
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].begin, 0);  // KV is there, but no KDA state to restore
  EXPECT_FALSE(plan.seqs[0].restore_from.valid());
  s.apply(plan, std::vector<int32_t>{5});
  auto done = run_to_idle(s, cache);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].n_hit_tokens, 0);
  EXPECT_EQ(done[0].n_kv_hit_tokens, 960);
}

TEST(Scheduler, FullPromptHitStillComputesTheLastToken) {
  HybridCache cache(small_cache(1 << 20, "every-block"));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(640, 0), 1));
  run_to_idle(s, cache);
  s.add(make_request(2, iota_tokens(640, 0), 1));
  SchedulePlan plan = s.step();
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].begin, 576);  // one page back: the last token must produce logits
  EXPECT_EQ(plan.seqs[0].end, 640);
  EXPECT_TRUE(plan.seqs[0].samples);
}

TEST(Scheduler, PreemptsTheNewestRequestWhenGrowthDoesNotFit) {
  // 4 pages of KV + 2 live states (8 B each) + room for a few checkpoints; each request needs
  // 2 pages for its prompt and grows into a third while decoding.
  HybridCache cache(small_cache(4 * 64 + 2 * 8 + 16, "none"));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(120, 0), 20));
  s.add(make_request(2, iota_tokens(120, 5000), 20));
  bool saw_preemption = false;
  std::vector<Request> done;
  for (int i = 0; i < 1000 && !s.idle(); ++i) {
    SchedulePlan plan = s.step();
    if (!plan.preempted.empty()) {
      saw_preemption = true;
      EXPECT_EQ(plan.preempted[0], 2);  // the newest goes first
    }
    int64_t n = 0;
    for (const auto& q : plan.seqs) n += q.samples;
    StepEvents ev = s.apply(plan, std::vector<int32_t>(static_cast<size_t>(n), 9));
    cache.check_invariants();
    for (auto& r : ev.finished) done.push_back(std::move(r));
    EXPECT_TRUE(ev.rejected.empty());
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GE(s.n_preemptions(), 1);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& r : done) EXPECT_EQ(r.n_output_tokens, 20);
  EXPECT_EQ(done[0].id, 1);  // the older request was never preempted and finished first
  EXPECT_EQ(done[0].n_preemptions, 0);
  EXPECT_GE(done[1].n_preemptions, 1);
}

TEST(Scheduler, RejectsARequestThatCanNeverFit) {
  HybridCache cache(small_cache(2 * 64 + 8, "none"));
  Scheduler s({.max_step_tokens = 8192, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(1000, 0), 2));
  SchedulePlan plan = s.step();
  EXPECT_TRUE(plan.empty());
  StepEvents ev = s.apply(plan, {});
  ASSERT_EQ(ev.rejected.size(), 1u);
  EXPECT_EQ(ev.rejected[0].id, 1);
  EXPECT_EQ(ev.rejected[0].status, RequestStatus::Aborted);
  EXPECT_TRUE(s.idle());
  cache.check_invariants();
}

TEST(Scheduler, RejectsARequestThatOutgrowsTheCacheAlone) {
  // Room for 5 pages: admission and the first 128-token chunks fit, the whole prompt never does.
  // Without the rejection it would be preempted and recomputed from the start forever.
  HybridCache cache(small_cache(5 * 64 + 8, "none"));
  Scheduler s({.max_step_tokens = 128, .max_running = 16}, cache);
  s.add(make_request(1, iota_tokens(1000, 0), 2));
  std::vector<Request> rejected;
  for (int i = 0; i < 100 && !s.idle(); ++i) {
    SchedulePlan plan = s.step();
    StepEvents ev = s.apply(plan, {});
    for (auto& r : ev.rejected) rejected.push_back(std::move(r));
    cache.check_invariants();
  }
  EXPECT_TRUE(s.idle());
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].status, RequestStatus::Aborted);
  EXPECT_EQ(rejected[0].n_computed_tokens, 256);  // the chunk to 384 tokens needs a 6th page
  EXPECT_EQ(cache.n_running(), 0);
}

TEST(Scheduler, MaxRunningCapsAdmission) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({.max_step_tokens = 8192, .max_running = 2}, cache);
  for (int i = 0; i < 4; ++i) s.add(make_request(i + 1, iota_tokens(10, 1000 * i), 5));
  SchedulePlan plan = s.step();
  EXPECT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(s.n_waiting(), 2);
}

TEST(Scheduler, BadInputIsAnError) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({}, cache);
  EXPECT_THROW(s.add(make_request(1, {}, 3)), Error);
  EXPECT_THROW(s.add(make_request(1, {1, 2}, 0)), Error);
  EXPECT_THROW(Scheduler({.max_step_tokens = 0}, cache), Error);
  SchedulePlan stale = s.step();
  s.apply(stale, {});
  EXPECT_THROW(s.apply(stale, {}), Error);  // a plan applies once
}

TEST(Scheduler, PrefillFirstStepsAreAllPrefillOrAllDecode) {
  HybridCache cache(small_cache(1 << 20));
  Scheduler s({.max_step_tokens = 4096, .max_running = 16, .mixed_batches = false}, cache);
  s.add(make_request(1, iota_tokens(3000, 0), 20));
  int steps = 0, decode_steps = 0;
  bool added = false;
  while (!s.idle() && steps < 1000) {
    SchedulePlan plan = s.step();
    ++steps;
    bool any_prefill = false, any_decode = false;
    int64_t n_samples = 0;
    for (const auto& seq : plan.seqs) {
      (seq.n_tokens() > 1 || seq.begin < 3000 ? any_prefill : any_decode) = true;
      n_samples += seq.samples ? 1 : 0;
    }
    EXPECT_FALSE(any_prefill && any_decode) << "step " << steps << " mixes prefill and decode";
    decode_steps += any_decode ? 1 : 0;
    StepEvents ev = s.apply(plan, std::vector<int32_t>(static_cast<size_t>(n_samples), 7));
    // Request 2 arrives while request 1 decodes: its whole prefill runs before the next decode.
    if (!added && decode_steps == 5) {
      s.add(make_request(2, iota_tokens(6000, 100000), 20));
      added = true;
      SchedulePlan p1 = s.step();
      ASSERT_EQ(p1.seqs.size(), 1u);
      EXPECT_EQ(p1.seqs[0].request_id, 2);
      EXPECT_EQ(p1.seqs[0].n_tokens(), 4096);
      s.apply(p1, {});
      SchedulePlan p2 = s.step();  // the chunked rest, still no decode
      ASSERT_EQ(p2.seqs.size(), 1u);
      EXPECT_EQ(p2.seqs[0].request_id, 2);
      EXPECT_EQ(p2.seqs[0].n_tokens(), 6000 - 4096);
      s.apply(p2, std::vector<int32_t>(1, 7));
      SchedulePlan p3 = s.step();  // both decode together
      EXPECT_EQ(p3.seqs.size(), 2u);
      s.apply(p3, std::vector<int32_t>(2, 7));
      steps += 3;
    }
    cache.check_invariants();
  }
  EXPECT_TRUE(s.idle());
}

}  // namespace
}  // namespace ds
