// Mooncake JSONL parsing: the bundled FAST'25 files and malformed lines.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/mooncake_trace.h"
#include "trace/trace_stats.h"
#include "trace_test_util.h"

namespace ds {
namespace {

std::string error_of(const std::string& text) {
  Trace t;
  try {
    parse_mooncake_jsonl(text, "m.jsonl", {}, t);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MooncakeTrace, ParsesLinesAsOpenLoopRequests) {
  Trace t;
  parse_mooncake_jsonl(
      "{\"timestamp\": 1500, \"input_length\": 600, \"output_length\": 9, \"hash_ids\": [0, 1]}\n\n"
      "{\"timestamp\": 2000, \"input_length\": 512, \"output_length\": 0, \"hash_ids\": [0], \"x\": {}}\n",
      "m.jsonl", {}, t);
  EXPECT_FALSE(t.closed_loop);
  EXPECT_EQ(t.block_tokens, 512);
  ASSERT_EQ(t.sessions.size(), 2u);
  EXPECT_EQ(t.sessions[1].id, "m.jsonl:3");
  const TraceTurn& a = t.sessions[0].turns.at(0);
  EXPECT_DOUBLE_EQ(a.arrival_s, 1.5);
  EXPECT_EQ(a.n_input_tokens, 600);
  EXPECT_EQ(a.n_output_tokens, 9);
  uint64_t ns = name_namespace("m.jsonl");
  EXPECT_EQ(a.hash_ids, (std::vector<uint64_t>{namespaced_block_id(ns, 0), namespaced_block_id(ns, 1)}));
  EXPECT_EQ(t.sessions[1].turns[0].hash_ids[0], a.hash_ids[0]);
  // Request 2 repeats request 1's first full block: 512 of 1112 tokens.
  EXPECT_DOUBLE_EQ(theoretical_hit_rate(t), 512.0 / 1112.0);
}

TEST(MooncakeTrace, MalformedLinesNameFileAndLine) {
  std::string ok = "{\"timestamp\":0,\"input_length\":10,\"output_length\":1,\"hash_ids\":[1]}\n";
  EXPECT_EQ(error_of(ok + "{\"timestamp\":0,\"input_length\":10,\"output_length\":1,\"hash_ids\":[1]\n"),
            "m.jsonl:2: expected ',', got end of input");
  EXPECT_EQ(error_of(ok + "{\"timestamp\":0,\"output_length\":1,\"hash_ids\":[1]}"),
            "m.jsonl:2: missing field `input_length`");
  EXPECT_EQ(error_of(ok + ok + "{\"timestamp\":0,\"input_length\":-4,\"output_length\":1,\"hash_ids\":[]}"),
            "m.jsonl:3: field `input_length` = -4 must be in [1, 67108864]");
  EXPECT_EQ(error_of("{\"timestamp\":0,\"input_length\":1025,\"output_length\":1,\"hash_ids\":[1,2]}"),
            "m.jsonl:1: `hash_ids` has 2 ids but `input_length` = 1025 needs ceil(1025/512) = 3");
  EXPECT_EQ(error_of("{\"timestamp\":-1,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}"),
            "m.jsonl:1: field `timestamp` = -1 ms must be >= 0");
  EXPECT_EQ(error_of("{\"timestamp\":0,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]} {}"),
            "m.jsonl:1: unexpected '{' after the JSON value");
  EXPECT_EQ(error_of("[]"), "m.jsonl:1: a line must hold one JSON object");
}

TEST(MooncakeTrace, SkipBadCountsLines) {
  TraceOptions opt;
  opt.skip_bad = true;
  Trace t;
  parse_mooncake_jsonl(
      "garbage\n{\"timestamp\":0,\"input_length\":10,\"output_length\":1,\"hash_ids\":[1]}\n{\"a\":1}\n", "m",
      opt, t);
  EXPECT_EQ(t.sessions.size(), 1u);
  EXPECT_EQ(t.n_skipped_bad, 2);
}

// Request counts and spans from the upstream README; the hit rate counts whole 512-token blocks
// only (the README's 37.4 % / 65.1 % also credit partial last blocks).
TEST(MooncakeTrace, BundledFiles) {
  Trace conv = load_trace("bundled:mooncake_fast25_conversation_trace.jsonl.gz");
  EXPECT_EQ(conv.sessions.size(), 12031u);
  EXPECT_FALSE(conv.closed_loop);
  EXPECT_DOUBLE_EQ(conv.sessions.back().turns[0].arrival_s, 3536.999);
  EXPECT_NEAR(theoretical_hit_rate(conv), 0.3734, 0.0001);
  Trace syn = load_trace(test::bundled("mooncake_fast25_synthetic_trace.jsonl.gz"));
  EXPECT_EQ(syn.sessions.size(), 3993u);
  EXPECT_NEAR(theoretical_hit_rate(syn), 0.6504, 0.0001);
}

}  // namespace
}  // namespace ds
