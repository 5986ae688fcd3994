// Claude Code session parsing: the bundled sample, sub-agents, namespacing, malformed input.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/claude_code_trace.h"
#include "trace/trace_stats.h"
#include "trace_test_util.h"

namespace ds {
namespace {

// A session with 3 requests; the second is a sub-agent with 2 requests of its own.
std::string small_session(const std::string& id = "s1") {
  return R"({"id":")" + id + R"(","block_size":64,"hash_id_scope":"local","requests":[
 {"t":0.0,"type":"n","in":130,"out":5,"hash_ids":[1,2],"api_time":2.0,"think_time":0.0},
 {"t":50.0,"type":"subagent","agent_id":"agent_001","duration_ms":30000,"requests":[
   {"t":0.0,"type":"n","in":64,"out":3,"hash_ids":[9],"api_time":1.0,"think_time":0.0},
   {"t":4.0,"type":"n","in":128,"out":4,"hash_ids":[9,10],"api_time":1.0,"think_time":3.0}]},
 {"t":60.0,"type":"s","in":200,"out":7,"hash_ids":[1,2,3],"api_time":1.0,"think_time":58.0}]})";
}

Trace parse(const std::string& text, const TraceOptions& opt = {}) {
  Trace t;
  parse_claude_code_session(text, "dir/s1.json", opt, true, t);
  return t;
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ClaudeCodeTrace, InlineSubagentsKeepOrderTimesAndNamespace) {
  Trace t = parse(small_session());
  ASSERT_EQ(t.sessions.size(), 1u);
  const auto& turns = t.sessions[0].turns;
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_EQ(t.sessions[0].id, "s1");
  EXPECT_EQ(t.block_tokens, 64);
  // Sub-agent starts at t - duration = 20 s; its requests follow at 20 s and 24 s.
  EXPECT_DOUBLE_EQ(turns[1].arrival_s, 20.0);
  EXPECT_DOUBLE_EQ(turns[2].arrival_s, 24.0);
  EXPECT_DOUBLE_EQ(turns[2].think_time_s, 3.0);
  // The parent waited for the sub-agent (which ended at t = 50 s): it thinks 60 - 50 = 10 s, not
  // the recorded 58 s since its own previous request.
  EXPECT_DOUBLE_EQ(turns[3].arrival_s, 60.0);
  EXPECT_DOUBLE_EQ(turns[3].think_time_s, 10.0);
  EXPECT_EQ(turns[0].n_input_tokens, 130);
  EXPECT_EQ(turns[0].n_output_tokens, 5);
  // 130 tokens = 2 hashed blocks + a 2-token tail that gets a unique id.
  ASSERT_EQ(turns[0].hash_ids.size(), 3u);
  uint64_t ns = name_namespace("s1");
  EXPECT_EQ(turns[0].hash_ids[0], namespaced_block_id(ns, 1));
  EXPECT_EQ(turns[0].hash_ids[1], namespaced_block_id(ns, 2));
  EXPECT_EQ(turns[3].hash_ids[2], namespaced_block_id(ns, 3));
  EXPECT_NE(turns[0].hash_ids[2], turns[3].hash_ids[2]);
  ASSERT_EQ(turns[3].hash_ids.size(), 4u);  // 200 = 3 blocks + 8-token tail
  EXPECT_NE(turns[0].hash_ids[2], turns[3].hash_ids[3]);
  EXPECT_EQ(turns[1].hash_ids.size(), 1u);  // exactly one block: no tail
}

TEST(ClaudeCodeTrace, SubagentsAsSessions) {
  TraceOptions opt;
  opt.subagents = SubagentMode::Sessions;
  Trace t = parse(small_session(), opt);
  ASSERT_EQ(t.sessions.size(), 2u);
  EXPECT_EQ(t.sessions[0].turns.size(), 2u);
  EXPECT_EQ(t.sessions[1].id, "s1/agent_001");
  ASSERT_EQ(t.sessions[1].turns.size(), 2u);
  EXPECT_DOUBLE_EQ(t.sessions[1].turns[0].arrival_s, 20.0);
  EXPECT_DOUBLE_EQ(t.sessions[0].turns[1].think_time_s, 58.0);
  // Sub-agents share the parent's namespace.
  EXPECT_EQ(t.sessions[1].turns[0].hash_ids[0], namespaced_block_id(name_namespace("s1"), 9));
}

// AgentX replays sub-agents as branches: spawned when the previous root turn finishes (offset =
// sub-agent start - that turn's end), joined by the next root turn.
TEST(ClaudeCodeTrace, SubagentsAsBranches) {
  TraceOptions opt;
  opt.subagents = SubagentMode::Branches;
  Trace t = parse(small_session(), opt);
  ASSERT_EQ(t.sessions.size(), 1u);
  const TraceSession& s = t.sessions[0];
  ASSERT_EQ(s.turns.size(), 2u);
  ASSERT_EQ(s.branches.size(), 1u);
  const TraceBranch& b = s.branches[0];
  EXPECT_EQ(b.spawn_after, 0);
  EXPECT_EQ(b.join_before, 1);
  EXPECT_DOUBLE_EQ(b.start_offset_s, 18.0);  // starts at 50 - 30 = 20 s; turn 0 ended at 2 s
  ASSERT_EQ(b.turns.size(), 2u);
  EXPECT_DOUBLE_EQ(b.turns[0].think_time_s, 0.0);
  EXPECT_DOUBLE_EQ(b.turns[1].think_time_s, 3.0);
  EXPECT_EQ(b.turns[1].n_input_tokens, 128);
  EXPECT_DOUBLE_EQ(s.turns[1].think_time_s, 10.0);  // waited for the sub-agent (ended at 50 s)
}

// A null duration_ms (some of the 710 public sessions) falls back to the children's api + think.
TEST(ClaudeCodeTrace, NullSubagentDurationUsesItsRequests) {
  std::string text = small_session();
  text.replace(text.find("\"duration_ms\":30000"), 19, "\"duration_ms\":null");
  TraceOptions opt;
  opt.subagents = SubagentMode::Branches;
  Trace t = parse(text, opt);
  ASSERT_EQ(t.sessions[0].branches.size(), 1u);
  EXPECT_DOUBLE_EQ(t.sessions[0].branches[0].start_offset_s, 43.0);  // 50 - (1 + 1 + 3) - 2
}

// A sub-agent before any root turn has nothing to spawn it: dropped, as AIPerf drops it.
TEST(ClaudeCodeTrace, LeadingSubagentIsDroppedAsBranch) {
  const std::string text = R"({"id":"s2","block_size":64,"requests":[
 {"t":10.0,"type":"subagent","agent_id":"a","duration_ms":5000,"requests":[
   {"t":0.0,"type":"n","in":64,"out":3,"hash_ids":[9],"api_time":1.0,"think_time":0.0}]},
 {"t":12.0,"type":"n","in":64,"out":5,"hash_ids":[1],"api_time":1.0,"think_time":0.0}]})";
  TraceOptions opt;
  opt.subagents = SubagentMode::Branches;
  Trace t = parse(text, opt);
  ASSERT_EQ(t.sessions.size(), 1u);
  EXPECT_EQ(t.sessions[0].turns.size(), 1u);
  EXPECT_TRUE(t.sessions[0].branches.empty());
}

TEST(ClaudeCodeTrace, LocalIdsOfDifferentSessionsDoNotShare) {
  Trace t;
  parse_claude_code_session(small_session("a"), "a.json", {}, true, t);
  parse_claude_code_session(small_session("b"), "b.json", {}, false, t);
  ASSERT_EQ(t.sessions.size(), 2u);
  EXPECT_NE(t.sessions[0].turns[0].hash_ids[0], t.sessions[1].turns[0].hash_ids[0]);
  // Within a session turn 3 reuses turn 0's 2 blocks and the sub-agent reuses block 9: 3 of 8
  // full blocks hit, per session, never across sessions.
  std::vector<std::vector<int64_t>> hits = theoretical_hit_tokens(t);
  EXPECT_EQ(hits[0], (std::vector<int64_t>{0, 0, 64, 128}));
  EXPECT_EQ(hits[1], hits[0]);
}

TEST(ClaudeCodeTrace, MalformedRequestsNameFileLineAndRequest) {
  auto with = [](const std::string& req) {
    return "{\"id\":\"s\",\"requests\":[\n{\"t\":0,\"in\":64,\"out\":1,\"hash_ids\":[1]},\n" + req + "]}";
  };
  EXPECT_EQ(error_of(with(R"({"t":1,"out":1,"hash_ids":[1]})")),
            "dir/s1.json:3: request 1: missing field `in`");
  EXPECT_EQ(error_of(with(R"({"t":1,"in":-5,"out":1,"hash_ids":[]})")),
            "dir/s1.json:3: request 1: field `in` = -5 must be in [1, 67108864]");
  EXPECT_EQ(error_of(with(R"({"t":1,"in":64,"out":-1,"hash_ids":[1]})")),
            "dir/s1.json:3: request 1: field `out` = -1 must be in [0, 67108864]");
  EXPECT_EQ(
      error_of(with(R"({"t":1,"in":200,"out":1,"hash_ids":[1]})")),
      "dir/s1.json:3: request 1: `hash_ids` has 1 ids but `in` = 200 needs 3 (full 64-token blocks) or 4 "
      "(with the partial last block)");
  EXPECT_EQ(error_of(with(R"({"t":1,"in":64,"out":1,"hash_ids":[-3]})")),
            "dir/s1.json:3: request 1: `hash_ids` holds a negative id -3");
  EXPECT_EQ(error_of(with(R"({"t":1,"in":"64","out":1,"hash_ids":[1]})")),
            "dir/s1.json:3: field `in` must be an integer");
  EXPECT_EQ(error_of(with(R"({"t":-1,"in":64,"out":1,"hash_ids":[1]})")),
            "dir/s1.json:3: field `t` = -1 must be >= 0");
  EXPECT_EQ(error_of("{\"id\":\"s\",\"requests\":[{\"t\":0,"), "dir/s1.json:1: expected a member name");
  EXPECT_EQ(error_of(R"({"id":"s"})"), "dir/s1.json:1: missing field `requests`");
  EXPECT_EQ(error_of(R"([1,2])"), "dir/s1.json:1: a session file must hold one JSON object");
  EXPECT_EQ(error_of(R"({"block_size":0,"requests":[]})"),
            "dir/s1.json:1: field `block_size` = 0 must be in [1, 1048576]");
}

TEST(ClaudeCodeTrace, FullAndCeilHashIdCountsAreBothAccepted) {
  Trace t = parse(
      R"({"id":"s","requests":[{"t":0,"in":65,"out":1,"hash_ids":[1,2]},{"t":1,"in":65,"out":1,"hash_ids":[1]}]})");
  ASSERT_EQ(t.sessions[0].turns.size(), 2u);
  EXPECT_EQ(t.sessions[0].turns[0].hash_ids.size(), 2u);
  EXPECT_EQ(t.sessions[0].turns[1].hash_ids.size(), 2u);
}

TEST(ClaudeCodeTrace, SkipBadCountsSkippedRequestsAndFiles) {
  TraceOptions opt;
  opt.skip_bad = true;
  Trace t;
  std::string text =
      R"({"id":"s","requests":[{"t":0,"in":64,"out":1,"hash_ids":[1]},{"t":1,"in":64,"hash_ids":[1]},
    {"t":2,"in":-1,"out":1,"hash_ids":[]},{"t":3,"type":"subagent","requests":[{"t":0,"in":9,"out":1,"hash_ids":[5,6]}]},
    {"t":4,"in":128,"out":1,"hash_ids":[1,2]}]})";
  parse_claude_code_session(text, "s.json", opt, true, t);
  ASSERT_EQ(t.sessions.size(), 1u);
  EXPECT_EQ(t.sessions[0].turns.size(), 2u);
  EXPECT_EQ(t.n_skipped_bad, 3);
  parse_claude_code_session("{\"requests\": [", "broken.json", opt, false, t);
  EXPECT_EQ(t.n_skipped_bad, 4);
  EXPECT_EQ(t.sessions.size(), 1u);
}

TEST(ClaudeCodeTrace, DifferentBlockSizesAcrossFilesAreAnError) {
  Trace t;
  parse_claude_code_session(R"({"block_size":64,"requests":[]})", "a.json", {}, true, t);
  EXPECT_THROW(parse_claude_code_session(R"({"block_size":16,"requests":[]})", "b.json", {}, false, t),
               Error);
  TraceOptions skip;
  skip.skip_bad = true;
  parse_claude_code_session(R"({"block_size":16,"requests":[{"t":0,"in":16,"out":1,"hash_ids":[1]}]})",
                            "b.json", skip, false, t);
  EXPECT_EQ(t.n_skipped_bad, 1);
  EXPECT_TRUE(t.sessions.empty());
  EXPECT_EQ(t.block_tokens, 64);
}

TEST(ClaudeCodeTrace, BundledSampleLoads) {
  Trace t = load_trace("bundled");
  EXPECT_EQ(t.source, "bundled:claude_code_sample.tar.gz");
  EXPECT_EQ(t.block_tokens, 64);
  EXPECT_TRUE(t.closed_loop);
  EXPECT_EQ(t.n_skipped_bad, 0);
  // Counted independently with Python over the 46 JSON files (see data/traces/README.md).
  ASSERT_EQ(t.sessions.size(), 46u);
  TraceSummary s = summarize(t);
  EXPECT_EQ(s.n_turns, 2986);
  EXPECT_EQ(s.total_input_tokens, 388945116);
  EXPECT_EQ(s.total_output_tokens, 1311108);
  EXPECT_DOUBLE_EQ(s.median_input_tokens, 114819.5);
  EXPECT_DOUBLE_EQ(s.median_output_tokens, 214.0);
  EXPECT_DOUBLE_EQ(s.median_turns_per_session, 43.5);
  for (const TraceSession& session : t.sessions)
    for (const TraceTurn& turn : session.turns)
      ASSERT_EQ(static_cast<int64_t>(turn.hash_ids.size()), (turn.n_input_tokens + 63) / 64) << session.id;
  TraceOptions one;
  one.max_sessions = 1;
  EXPECT_EQ(load_trace("", one).sessions.at(0).id, t.sessions[0].id);
  EXPECT_EQ(load_trace("default", one).sessions.at(0).id, t.sessions[0].id);
}

TEST(ClaudeCodeTrace, MaxSessions) {
  TraceOptions opt;
  opt.max_sessions = 5;
  EXPECT_EQ(load_trace("bundled", opt).sessions.size(), 5u);
}

}  // namespace
}  // namespace ds
