// The `generate --requests` batch: JSONL parsing with one-line errors naming the line and field,
// `after` ordering and `extends` prompts (a follow-up turn hits the cache), results in input order.
#include <gtest/gtest.h>

#include "core/check.h"
#include "echo_executor.h"
#include "engine/request_batch.h"

namespace ds {
namespace {

using test::echo_cold;
using test::EchoExecutor;

EngineConfig small_engine() {
  EngineConfig c;
  c.scheduler = {.max_step_tokens = 64, .max_running = 8};
  c.cache.page_tokens = 8;
  c.cache.sizes = {.kv_bytes_per_token = 1, .checkpoint_bytes = 16, .live_state_bytes = 16};
  c.cache.tiers = {CacheTier{.name = "hbm", .capacity_bytes = 1 << 16}};
  c.cache.retention = "every-block";
  c.check_invariants = true;
  return c;
}

std::string error_of(const std::string& text) {
  try {
    parse_batch_requests(text, "in.jsonl", 1000);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RequestBatch, ParsesAndRejectsBadLinesByName) {
  const auto r = parse_batch_requests(
      "{\"id\": \"a\", \"tokens\": [1, 2, 3], \"max_tokens\": 4}\n\n"
      "{\"id\": \"b\", \"tokens\": [4], \"max_tokens\": 2, \"after\": \"a\", \"extends\": true, "
      "\"temperature\": 0.5, \"top_k\": 3, \"top_p\": 0.9, \"min_p\": 0.1, \"seed\": 7, \"stop_token_ids\": "
      "[9]}\n",
      "in.jsonl", 1000);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].after, "a");
  EXPECT_TRUE(r[1].extends);
  EXPECT_EQ(r[1].sampling.top_k, 3);
  EXPECT_EQ(*r[1].sampling.seed, 7u);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 0}").find("in.jsonl:1"),
            std::string::npos);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1, 1000], \"max_tokens\": 2}").find("vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 2, \"after\": \"z\"}").find("earlier"),
            std::string::npos);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 2}\n{\"id\": \"a\", \"tokens\": [1], "
                     "\"max_tokens\": 2}")
                .find("in.jsonl:2: duplicate"),
            std::string::npos);
  EXPECT_NE(
      error_of("{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 2, \"colour\": 1}").find("unknown key"),
      std::string::npos);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 2, \"top_p\": 0}").find("in.jsonl:1"),
            std::string::npos);
  EXPECT_NE(error_of("{\"id\": \"a\", \"tokens\": [1] ").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("").find("no requests"), std::string::npos);
}

TEST(RequestBatch, FollowUpTurnsRunAfterAndHitTheCache) {
  EchoExecutor ex;
  VirtualClock clock;
  Engine engine(small_engine(), ex, clock);
  std::vector<int32_t> a(40);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int32_t(i * 7 % 1000);
  std::vector<BatchRequest> reqs(3);
  reqs[0] = {.id = "a", .tokens = a, .max_tokens = 6};
  reqs[1] = {.id = "b", .tokens = {5, 6, 7}, .max_tokens = 4, .after = "a", .extends = true};
  reqs[2] = {.id = "c", .tokens = {1, 2}, .max_tokens = 3};
  const auto res = run_batch(engine, reqs);
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res[0].id, "a");
  EXPECT_EQ(res[0].output_tokens, echo_cold(a, 6, 1000));
  std::vector<int32_t> b = a;
  b.insert(b.end(), res[0].output_tokens.begin(), res[0].output_tokens.end());
  b.insert(b.end(), {5, 6, 7});
  EXPECT_EQ(res[1].prompt_tokens, int64_t(b.size()));
  EXPECT_EQ(res[1].output_tokens, echo_cold(b, 4, 1000));
  EXPECT_EQ(res[1].cached_tokens, 40);  // a's 45 computed tokens, rounded down to a page
  EXPECT_EQ(res[2].finish_reason, "length");
  const std::string out = format_batch_results(res);
  EXPECT_EQ(out.substr(0, 10), "{\"id\":\"a\",");
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
}

}  // namespace
}  // namespace ds
