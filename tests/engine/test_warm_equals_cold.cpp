// The real model under the Engine (ModelExecutor over the CPU runner) on both golden checkpoints:
// a request that hits the prefix cache produces exactly the greedy tokens, and logits within 1e-5,
// of the same request computed cold by the `deltaserve logits` code path — for every retention
// policy, from a host tier after demotion and promotion, after preemption and recompute, in mixed
// batches of many lengths; random request streams (shared prefixes, aborts, tight budgets) equal
// their cold runs; a forced hash collision is computed cold, not served; boundary-aware eviction under
// overload restores from held paths to the same tokens.
#include <gtest/gtest.h>

#include <cstdio>

#include "model_engine.h"

namespace ds {
namespace {

using namespace ds::test;

class WarmEqualsCold : public ::testing::TestWithParam<std::string> {
 protected:
  const ModelRunner& runner() const { return golden_runner(GetParam()); }
  int32_t vocab() const { return int32_t(runner().config().vocab_size); }
  void host_tier_round_trip(const std::string& retention);
};

// Largest warm-vs-cold logit difference per model seen by this process (printed at exit).
struct Report {
  std::map<std::string, double> worst;
  ~Report() {
    for (const auto& [model, d] : worst)
      std::printf("warm-vs-cold max |logit diff| %s: %.3g\n", model.c_str(), d);
  }
} g_report;
void note(const ModelRunner& r, double d) {
  double& w = g_report.worst[r.config().attn_res_block_size > 0 ? "k3-tiny" : "kimi-linear-tiny"];
  w = std::max(w, d);
}

TEST_P(WarmEqualsCold, FollowUpTurnHitsForEveryRetentionPolicy) {
  for (const bool host : {false, true})
    for (const std::string retention : {"every-block", "interval:32", "semantic", "prompt-end", "none"}) {
      ModelEngine me(runner(), {.retention = retention, .host_tokens = host ? 1 << 16 : 0});
      std::mt19937_64 rng(7);
      me.engine.add(make_request(1, random_tokens(rng, 150, vocab()), 12));
      auto done = me.run();
      const Request& first = done.at(1);
      const auto prompt2 = concat(first.tokens, random_tokens(rng, 37, vocab()));  // prompt + output + new
      const CacheHit predicted = me.engine.cache().match(prompt2);
      me.engine.add(make_request(2, prompt2, 6));
      const Request second = me.run().at(2);
      if (retention == "none") {
        EXPECT_EQ(second.n_hit_tokens, 0);
      } else {
        EXPECT_GT(second.n_hit_tokens, 0) << retention;
      }
      EXPECT_EQ(second.n_hit_tokens, predicted.n_hit_tokens) << retention;
      note(runner(), expect_warm_equals_cold(runner(), me.exec, first));
      note(runner(), expect_warm_equals_cold(runner(), me.exec, second));
    }
}

TEST_P(WarmEqualsCold, HitFromTheHostTierAfterDemotionAndPromotion) {
  for (const std::string retention : {"every-block", "interval:32", "semantic", "prompt-end"}) {
    SCOPED_TRACE(retention);
    host_tier_round_trip(retention);
  }
}

void WarmEqualsCold::host_tier_round_trip(const std::string& retention) {
  // A device budget that holds a few states: unrelated requests push the first one's pages and
  // checkpoints to the host; the follow-up promotes them back.
  const CacheModelSizes sz = ModelExecutor(runner(), 16).cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  ModelEngine me(runner(), {.retention = retention,
                            .device_tokens = 4 * state_tokens + 600,
                            .host_tokens = 80 * state_tokens,
                            .max_running = 1});
  std::mt19937_64 rng(11);
  me.engine.add(make_request(1, random_tokens(rng, 150, vocab()), 5));
  const Request first = me.run().at(1);
  for (RequestId id = 2; id <= 5; ++id) me.engine.add(make_request(id, random_tokens(rng, 150, vocab()), 3));
  me.run();
  EXPECT_GT(me.engine.cache().stats().n_evictions(EvictReason::KvDemoted), 0);
  const auto prompt = concat(first.tokens, random_tokens(rng, 20, vocab()));
  EXPECT_GT(me.engine.cache().match(prompt).n_hit_host_tokens, 0);
  me.engine.add(make_request(9, prompt, 6));
  const Request warm = me.run().at(9);
  EXPECT_GT(warm.n_hit_tokens, 0);
  EXPECT_GT(warm.n_host_hit_tokens, 0);
  EXPECT_GT(me.engine.cache().stats().pages_promoted, 0);
  note(runner(), expect_warm_equals_cold(runner(), me.exec, warm));
}

TEST_P(WarmEqualsCold, PreemptedRequestsRecomputeToTheSameTokens) {
  const ModelExecutor probe(runner(), 16);
  const CacheModelSizes sz = probe.cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  // Room for three live states and ~300 tokens of KV: two requests growing to 200 tokens each cannot
  // both fit, so the newer one is preempted (and re-admitted on a hit of its committed prefix).
  ModelEngine me(runner(), {.retention = "interval:64",
                            .device_tokens = 3 * state_tokens + 300 + 2 * state_tokens,
                            .step_tokens = 48});
  std::mt19937_64 rng(5);
  me.engine.add(make_request(1, random_tokens(rng, 130, vocab()), 70));
  me.engine.add(make_request(2, random_tokens(rng, 120, vocab()), 70));
  auto done = me.run();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_GT(me.engine.scheduler().n_preemptions(), 0);
  for (const auto& [id, r] : done) note(runner(), expect_warm_equals_cold(runner(), me.exec, r));
}

TEST_P(WarmEqualsCold, ManyRequestsOfDifferentLengthsInOneBatch) {
  ModelEngine me(runner(), {.retention = "every-block", .step_tokens = 512});
  std::mt19937_64 rng(3);
  const auto shared = random_tokens(rng, 70, vocab());
  me.engine.add(make_request(1, shared, 4));
  const Request first = me.run().at(1);
  RequestId id = 2;
  for (int64_t len : {1, 5, 17, 64, 65, 130, 33})
    me.engine.add(make_request(id++, random_tokens(rng, len, vocab()), 7));
  for (int64_t len : {3, 40})
    me.engine.add(make_request(id++, concat(first.tokens, random_tokens(rng, len, vocab())), 9));
  const auto done = me.run();
  ASSERT_EQ(done.size(), 9u);
  int hits = 0;
  for (const auto& [rid, r] : done) {
    hits += r.n_hit_tokens > 0;
    note(runner(), expect_warm_equals_cold(runner(), me.exec, r));
  }
  EXPECT_EQ(hits, 2);
}

TEST_P(WarmEqualsCold, ForcedHashCollisionIsComputedColdNotServed) {
  CacheSetup c;
  c.page_hash_bits = 1;  // half of all different pages under one parent share a key
  ModelEngine me(runner(), c);
  std::mt19937_64 rng(13);
  const auto base = random_tokens(rng, 16, vocab());
  me.engine.add(make_request(1, concat(base, random_tokens(rng, 40, vocab())), 3));
  me.run();
  RequestId id = 2;
  for (int i = 0; i < 6; ++i) {  // same first page, different second pages: collisions at page 2
    me.engine.add(make_request(id++, concat(base, random_tokens(rng, 40, vocab())), 3));
    for (const auto& [rid, r] : me.run()) note(runner(), expect_warm_equals_cold(runner(), me.exec, r));
  }
  EXPECT_GT(me.engine.cache().stats().hash_collisions, 0);
}

INSTANTIATE_TEST_SUITE_P(Golden, WarmEqualsCold, ::testing::Values(kKimiLinearTiny, kK3Tiny),
                         [](const auto& info) {
                           return info.param == kKimiLinearTiny ? "KimiLinear" : "K3";
                         });

// Random request streams on the Kimi Linear golden model: sessions extending earlier requests,
// unrelated prompts, aborts, and a budget tight enough to evict, demote and preempt.
TEST(WarmEqualsColdProperty, RandomStreamsEqualTheirColdRuns) {
  const ModelRunner& runner = golden_runner(kKimiLinearTiny);
  const int32_t V = int32_t(runner.config().vocab_size);
  const CacheModelSizes sz = ModelExecutor(runner, 16).cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  int64_t preemptions = 0, hits = 0, finished = 0, aborted = 0;
  for (const auto& [retention, host] : std::vector<std::pair<std::string, bool>>{
           {"every-block", false}, {"semantic", true}, {"interval:32", true}}) {
    ModelEngine me(runner, {.retention = retention,
                            .device_tokens = 5 * state_tokens + 200,
                            .host_tokens = host ? 30 * state_tokens : 0,
                            .step_tokens = 64,
                            .max_running = 4});
    std::mt19937_64 rng(retention.size() * 7 + host);
    std::vector<std::vector<int32_t>> history;
    std::map<RequestId, std::vector<int32_t>> prompts;
    RequestId next = 1;
    auto check = [&](EngineEvents& ev) {
      for (const Request& r : ev.finished) {
        EXPECT_EQ(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + r.n_prompt_tokens),
                  prompts.at(r.id));
        note(runner, expect_warm_equals_cold(runner, me.exec, r));
        hits += r.n_hit_tokens > 0;
        ++finished;
        history.push_back(r.tokens);
      }
      aborted += int64_t(ev.aborted.size());
    };
    for (int step = 0; step < 120; ++step) {
      if (rng() % 3 == 0) {
        std::vector<int32_t> p;
        if (!history.empty() && rng() % 3 != 0) p = history[rng() % history.size()];
        p = concat(p, random_tokens(rng, 1 + int64_t(rng() % 50), V));
        if (p.size() > 220) p.erase(p.begin() + 150, p.end() - 30);
        prompts[next] = p;
        me.engine.add(make_request(next++, p, 1 + int64_t(rng() % 10)));
      }
      if (rng() % 23 == 0 && next > 1) me.engine.abort(RequestId(1 + rng() % uint64_t(next - 1)));
      if (me.engine.idle()) continue;
      EngineEvents ev = me.engine.step();
      check(ev);
    }
    while (!me.engine.idle()) {
      EngineEvents ev = me.engine.step();
      check(ev);
    }
    preemptions += me.engine.scheduler().n_preemptions();
    EXPECT_EQ(me.engine.cache().n_running(), 0);
    EXPECT_EQ(me.engine.cache().stats().tiers[0].live_bytes, 0);
    me.engine.cache().check_invariants();
  }
  EXPECT_GT(finished, 30);
  EXPECT_GT(hits, 5);
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(aborted, 0);
}

// boundary-aware under overload on the real model: sessions take turns (each prompt extends the
// session's previous prompt and output) on a budget far below the sessions' combined contexts, so the
// cache evicts paths that come back (overloaded), holds a subset of sessions' paths and restores from
// them. Every request, hit through a held path or not, equals its cold run.
TEST(WarmEqualsColdHeldPaths, BoundaryAwareUnderOverloadEqualsColdRuns) {
  const ModelRunner& runner = golden_runner(kKimiLinearTiny);
  const int32_t V = int32_t(runner.config().vocab_size);
  const CacheModelSizes sz = ModelExecutor(runner, 16).cache_sizes();
  const int64_t state_tokens = sz.checkpoint_bytes / sz.kv_bytes_per_token;
  constexpr int kSessions = 8, kTurns = 6, kRunning = 2;
  ModelEngine me(runner, {.retention = "boundary-aware",
                          .eviction = "boundary-aware",
                          // 10 states (2 live) and ~2,000 KV tokens: less than the 8 sessions'
                          // deepest states plus their ~2,400 context tokens.
                          .device_tokens = 10 * state_tokens + 2000,
                          .step_tokens = 128,
                          .max_running = kRunning});
  std::mt19937_64 rng(17);
  const auto system = random_tokens(rng, 32, V);
  std::vector<std::vector<int32_t>> context(kSessions, system);
  int64_t hits = 0, deep_hits = 0, n = 0;
  RequestId id = 1;
  for (int turn = 0; turn < kTurns; ++turn) {
    std::map<RequestId, int> session_of;
    for (int s = 0; s < kSessions; ++s) {
      context[size_t(s)] = concat(context[size_t(s)], random_tokens(rng, 40, V));
      session_of[id] = s;
      me.engine.add(make_request(id++, context[size_t(s)], 4));
    }
    for (const auto& [rid, r] : me.run()) {
      note(runner, expect_warm_equals_cold(runner, me.exec, r));
      context[size_t(session_of.at(rid))] = r.tokens;
      hits += r.n_hit_tokens > 0;
      deep_hits += r.n_hit_tokens > int64_t(system.size());  // a session's own turns, not only the system
      ++n;
    }
  }
  const CacheStats& st = me.engine.cache().stats();
  std::printf(
      "held paths: %lld of %lld requests hit (%lld past the system prompt), hit tokens %lld (held %lld), "
      "overloaded admissions %lld, "
      "KV dropped %lld, checkpoints dropped %lld\n",
      (long long)hits, (long long)n, (long long)deep_hits, (long long)st.hit_tokens,
      (long long)st.held_hit_tokens, (long long)st.overloaded_admissions,
      (long long)st.n_evictions(EvictReason::KvDropped), (long long)st.checkpoints_dropped);
  EXPECT_EQ(n, kSessions * kTurns);
  EXPECT_GT(st.n_evictions(EvictReason::KvDropped), 0);
  EXPECT_GT(st.overloaded_admissions, 0);  // the overload gate opened
  EXPECT_GT(st.held_hit_tokens, 0);        // and requests restored from held paths,
  EXPECT_GT(deep_hits, kSessions);         // past the shared system prompt
  me.engine.cache().check_invariants();
}

}  // namespace
}  // namespace ds
