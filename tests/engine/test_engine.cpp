// Engine over the model-free EchoExecutor: events and clocks, prefix hits that restore pages and
// checkpoints, and random request streams (shared prefixes, aborts, tight budgets forcing eviction,
// demotion and preemption) for every retention policy, with and without a host tier — every
// finished request equals its cold run, cache invariants hold after every step, pools end empty.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "echo_executor.h"
#include "engine/engine.h"

namespace ds {
namespace {

using test::echo_cold;
using test::EchoExecutor;

constexpr int32_t kVocab = 1000;

EngineConfig config(const std::string& retention, int64_t device_tokens, int64_t host_tokens = 0,
                    const std::string& eviction = "leaf-lru", int64_t step_tokens = 64) {
  EngineConfig c;
  c.scheduler = {.max_step_tokens = step_tokens, .max_running = 8};
  c.cache.page_tokens = 8;
  c.cache.sizes.kv_bytes_per_token = 1;
  c.cache.sizes.checkpoint_bytes = 16;  // two pages
  c.cache.sizes.live_state_bytes = 16;
  c.cache.tiers = {CacheTier{.name = "hbm", .capacity_bytes = device_tokens, .read_bw_bytes_per_s = 1e9}};
  if (host_tokens > 0)
    c.cache.tiers.push_back(
        CacheTier{.name = "dram", .capacity_bytes = host_tokens, .read_bw_bytes_per_s = 1e8});
  c.cache.retention = retention;
  c.cache.eviction = eviction;
  c.check_invariants = true;
  return c;
}

Request request(RequestId id, std::vector<int32_t> tokens, int64_t max_out) {
  Request r;
  r.id = id;
  r.tokens = std::move(tokens);
  r.max_output_tokens = max_out;
  return r;
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % kVocab);
  return t;
}

std::vector<int32_t> outputs(const Request& r) {
  return {r.tokens.begin() + r.n_prompt_tokens, r.tokens.end()};
}

TEST(Engine, RunsRequestsToCompletionWithTokenAndFinishEvents) {
  EchoExecutor ex(kVocab);
  VirtualClock clock;
  Engine engine(config("every-block", 1 << 12), ex, clock);
  std::mt19937_64 rng(1);
  const auto a = random_tokens(rng, 37), b = random_tokens(rng, 5);
  engine.add(request(1, a, 6));
  engine.add(request(2, b, 3));
  std::map<RequestId, std::vector<int32_t>> streamed;
  std::map<RequestId, Request> done;
  int steps = 0;
  while (!engine.idle()) {
    EngineEvents ev = engine.step();
    ASSERT_TRUE(ev.executed);
    EXPECT_NEAR(ev.step_s, 1e-3 * 2, 1.1e-3);
    for (const SampledToken& t : ev.tokens) {
      EXPECT_EQ(t.index, static_cast<int64_t>(streamed[t.request_id].size()));
      streamed[t.request_id].push_back(t.token);
    }
    for (Request& r : ev.finished) done.emplace(r.id, std::move(r));
    ++steps;
  }
  EXPECT_DOUBLE_EQ(clock.now_s(), engine.now_s());
  EXPECT_GT(clock.now_s(), 0);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(outputs(done.at(1)), echo_cold(a, 6, kVocab));
  EXPECT_EQ(outputs(done.at(2)), echo_cold(b, 3, kVocab));
  EXPECT_EQ(streamed[1], outputs(done.at(1)));
  EXPECT_EQ(done.at(1).status, RequestStatus::Finished);
  EXPECT_EQ(engine.n_steps(), steps);
}

TEST(Engine, FollowUpTurnRestoresTheCachedPrefix) {
  for (const std::string retention : {"every-block", "interval:16", "semantic", "prompt-end"}) {
    EchoExecutor ex(kVocab);
    VirtualClock clock;
    Engine engine(config(retention, 1 << 12), ex, clock);
    std::mt19937_64 rng(2);
    const auto a = random_tokens(rng, 45);
    engine.add(request(1, a, 12));
    Request first;
    while (!engine.idle())
      for (Request& r : engine.step().finished) first = std::move(r);
    auto b = first.tokens;  // previous prompt + its output + new tokens
    const auto more = random_tokens(rng, 9);
    b.insert(b.end(), more.begin(), more.end());
    const CacheHit predicted = engine.cache().match(b);
    engine.add(request(2, b, 5));
    Request second;
    while (!engine.idle())
      for (Request& r : engine.step().finished) second = std::move(r);
    EXPECT_GT(second.n_hit_tokens, 0) << retention;
    EXPECT_EQ(second.n_hit_tokens, predicted.n_hit_tokens) << retention;
    EXPECT_EQ(outputs(second), echo_cold(b, 5, kVocab)) << retention;
    EXPECT_GE(ex.n_transfers(TransferKind::Restore), 1) << retention;
  }
}

TEST(Engine, AbortReleasesEverythingAndReportsTheRequest) {
  EchoExecutor ex(kVocab);
  VirtualClock clock;
  Engine engine(config("every-block", 1 << 12), ex, clock);
  std::mt19937_64 rng(3);
  engine.add(request(1, random_tokens(rng, 100), 50));
  engine.add(request(2, random_tokens(rng, 10), 50));
  engine.step();
  EXPECT_TRUE(engine.abort(1));  // running (mid-prefill)
  EXPECT_TRUE(engine.abort(2));  // waiting or running
  EXPECT_FALSE(engine.abort(3));
  EXPECT_FALSE(engine.idle());  // the aborted events are still to be handed out
  EngineEvents ev = engine.step();
  ASSERT_EQ(ev.aborted.size(), 2u);
  EXPECT_EQ(ev.aborted[0].status, RequestStatus::Aborted);
  EXPECT_FALSE(ev.executed);
  EXPECT_TRUE(engine.idle());
  EXPECT_EQ(engine.cache().n_running(), 0);
  EXPECT_EQ(engine.cache().stats().tiers[0].live_bytes, 0);
  engine.cache().check_invariants();
}

TEST(Engine, StopTokenEndsTheRequest) {
  EchoExecutor ex(kVocab);
  VirtualClock clock;
  Engine engine(config("every-block", 1 << 12), ex, clock);
  std::mt19937_64 rng(4);
  const auto a = random_tokens(rng, 20);
  const auto cold = echo_cold(a, 10, kVocab);
  Request r = request(1, a, 10);
  r.sampling.stop_token_ids = {cold[3]};
  engine.add(r);
  Request done;
  while (!engine.idle())
    for (Request& f : engine.step().finished) done = std::move(f);
  // Ends at the first occurrence of the stop token, which is part of the output.
  const auto first_stop = std::find(cold.begin(), cold.end(), cold[3]) - cold.begin();
  EXPECT_EQ(outputs(done), std::vector<int32_t>(cold.begin(), cold.begin() + first_stop + 1));
  EXPECT_TRUE(done.stopped);
}

TEST(Engine, WallClockMovesOnItsOwn) {
  WallClock clock;
  const double t0 = clock.now_s();
  clock.wait_until(t0 + 0.01);
  EXPECT_GE(clock.now_s(), t0 + 0.01);
  VirtualClock v;
  v.wait_until(5);
  v.wait_until(1);  // never backwards
  v.step_done(0.5);
  EXPECT_DOUBLE_EQ(v.now_s(), 5.5);
}

// Random streams: sessions whose turns extend each other, unrelated prompts, aborts, budgets small
// enough to evict, demote and preempt. Every finished request must equal its cold run.
struct StreamTotals {
  int64_t preemptions = 0, demotions = 0, promotions = 0, dropped = 0, collisions = 0;
};

void random_stream(const std::string& retention, const std::string& eviction, int64_t device, int64_t host,
                   uint64_t seed, StreamTotals& totals, int page_hash_bits = 64) {
  EchoExecutor ex(kVocab);
  VirtualClock clock;
  EngineConfig cfg = config(retention, device, host, eviction, 48);
  cfg.cache.page_hash_bits = page_hash_bits;
  Engine engine(cfg, ex, clock);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int32_t>> history;  // prompts + outputs of finished requests
  RequestId next = 1;
  int64_t n_finished = 0, n_hits = 0;
  std::map<RequestId, std::vector<int32_t>> prompts;
  for (int step = 0; step < 400; ++step) {
    if (rng() % 3 == 0) {
      std::vector<int32_t> p;
      if (!history.empty() && rng() % 4 != 0) p = history[rng() % history.size()];  // follow-up turn
      const auto tail = random_tokens(rng, 1 + static_cast<int>(rng() % 40));
      p.insert(p.end(), tail.begin(), tail.end());
      if (p.size() > 160) p.erase(p.begin() + 120, p.end() - 20);  // keep prompts within budget
      prompts[next] = p;
      engine.add(request(next++, p, 1 + static_cast<int64_t>(rng() % 12)));
    }
    if (rng() % 17 == 0 && next > 1) engine.abort(static_cast<RequestId>(1 + rng() % (next - 1)));
    if (engine.idle()) continue;
    EngineEvents ev = engine.step();
    for (const Request& r : ev.finished) {
      ASSERT_EQ(outputs(r), echo_cold(prompts.at(r.id), r.n_output_tokens, kVocab))
          << retention << " " << eviction << " request " << r.id;
      n_hits += r.n_hit_tokens > 0;
      ++n_finished;
      history.push_back(r.tokens);
    }
  }
  while (!engine.idle()) {
    for (const Request& r : engine.step().finished)
      ASSERT_EQ(outputs(r), echo_cold(prompts.at(r.id), r.n_output_tokens, kVocab));
  }
  EXPECT_GT(n_finished, 20);
  if (retention != "none") EXPECT_GT(n_hits, 0) << retention << " " << eviction;
  const CacheStats& st = engine.cache().stats();
  EXPECT_EQ(engine.cache().n_running(), 0);
  EXPECT_EQ(st.tiers[0].live_bytes, 0);
  engine.cache().check_invariants();
  totals.preemptions += engine.scheduler().n_preemptions();
  totals.demotions += st.n_evictions(EvictReason::KvDemoted);
  totals.promotions += st.pages_promoted;
  totals.dropped += st.pages_dropped;
  totals.collisions += st.hash_collisions;
}

TEST(Engine, RandomStreamsEqualTheirColdRuns) {
  uint64_t seed = 10;
  StreamTotals totals;
  for (const std::string retention : {"every-block", "interval:16", "semantic", "prompt-end", "none"})
    for (const std::string eviction : {"leaf-lru", "consumed-state-lru", "flop-per-byte", "seglen"}) {
      random_stream(retention, eviction, 600, 0, ++seed, totals);    // device only, tight
      random_stream(retention, eviction, 400, 600, ++seed, totals);  // with a host tier
    }
  // The streams exercised what they are meant to.
  EXPECT_GT(totals.preemptions, 100);
  EXPECT_GT(totals.demotions, 1000);
  EXPECT_GT(totals.promotions, 100);
  EXPECT_GT(totals.dropped, 1000);
}

TEST(Engine, ForcedHashCollisionsAreComputedColdNotServed) {
  StreamTotals totals;
  uint64_t seed = 500;
  for (const std::string retention : {"every-block", "semantic"}) {
    random_stream(retention, "leaf-lru", 600, 0, ++seed, totals, 2);
    random_stream(retention, "leaf-lru", 400, 600, ++seed, totals, 2);
  }
  EXPECT_GT(totals.collisions, 10);
}

TEST(Engine, RandomStreamsWithAHostTierDemoteAndPromote) {
  EchoExecutor ex(kVocab);
  VirtualClock clock;
  Engine engine(config("every-block", 320, 4000, "leaf-lru", 48), ex, clock);
  std::mt19937_64 rng(99);
  std::vector<std::vector<int32_t>> sessions;
  for (int s = 0; s < 4; ++s) sessions.push_back(random_tokens(rng, 30));
  RequestId next = 1;
  for (int round = 0; round < 6; ++round)
    for (auto& p : sessions) {
      const auto tail = random_tokens(rng, 12);
      p.insert(p.end(), tail.begin(), tail.end());
      const auto prompt = p;
      engine.add(request(next++, prompt, 4));
      while (!engine.idle())
        for (const Request& r : engine.step().finished) {
          ASSERT_EQ(outputs(r), echo_cold(prompt, 4, kVocab));
          p = r.tokens;
        }
    }
  EXPECT_GT(ex.n_transfers(TransferKind::Page), 0);
  EXPECT_GT(engine.cache().stats().pages_promoted, 0);
  EXPECT_GT(engine.cache().stats().tiers[1].hit_tokens, 0);
}

}  // namespace
}  // namespace ds
