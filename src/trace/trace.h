// Trace: the workload a replay drives — sessions of turns (agentic, closed loop) or independent
// requests with arrival times (open loop). Prompts are materialised as deterministic token ids per
// hash-id block, so identical hash-id prefixes give identical token prefixes in the prefix tree.
// Invariant after loading: every turn has hash_ids.size() == ceil(n_input_tokens / block_tokens),
// and hash ids are global (per-session "local" ids are namespaced by session when loaded).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct TraceTurn {
  double arrival_s = 0;            // open loop: absolute arrival; closed loop: offset in its session
  double think_time_s = 0;         // closed loop: pause after the previous turn finished
  int64_t n_input_tokens = 0;      // prompt length in tokens (>= 1)
  int64_t n_output_tokens = 0;     // tokens to decode (>= 0)
  std::vector<uint64_t> hash_ids;  // one per block_tokens-token block of the prompt (last may be partial)
};

// Deterministic prompt token ids of a turn: block b contributes block_tokens ids derived from
// (hash_ids[b], position in block) by a fixed mixing function, truncated to n_input_tokens.
// Materialised on demand (a 142k-token prompt is 568 KB) rather than stored in the trace.
// Ids are in [0, 2^31). Throws ds::Error if hash_ids is shorter than the prompt needs.
std::vector<int32_t> turn_tokens(const TraceTurn& turn, int block_tokens);

// A sub-agent conversation of a session, as the AgentX harness replays it (AIPerf's SPAWN/JOIN
// model of the weka format): its own chain of turns, sent in parallel with the parent session and
// with sibling branches. It is spawned when the parent's turn `spawn_after` finishes; its first turn
// is sent start_offset_s later, each later turn think_time_s after the previous one finished. The
// parent's turn `join_before` is not sent before the branch is done; -1 = a background branch that
// nothing waits for. A branch's turns belong to the session (same hash-id namespace).
struct TraceBranch {
  int32_t spawn_after = 0;
  int32_t join_before = -1;
  double start_offset_s = 0;
  std::vector<TraceTurn> turns;
};

struct TraceSession {
  std::string id;                     // session id (file name, sub-agent suffix, or generated)
  std::vector<TraceTurn> turns;       // the root conversation, in order
  std::vector<TraceBranch> branches;  // sub-agents (SubagentMode::Branches and synthetic:agentx)
};

struct Trace {
  std::string source;         // path or "bundled:<name>" or "synthetic:<params>"
  int block_tokens = 64;      // tokens per hash-id block (64 Claude Code, 512 Mooncake)
  bool closed_loop = true;    // sessions driven by think time (true) or arrivals (false)
  bool fixed_length = false;  // a fixed-length benchmark (random:): every lane starts at t = 0, no warm-up
  std::vector<TraceSession> sessions;
  int64_t n_skipped_bad = 0;  // malformed records skipped under --skip-bad
};

// Where Claude Code sub-agents go: inline in the parent session at their position (the parent's
// Task tool call waits for them, sub-agents one after the other), each as its own session
// "<parent>/<agent_id>", or as branches of the parent (TraceBranch: sent in parallel, joined by the
// parent's next turn; the AgentX harness).
enum class SubagentMode { Inline, Sessions, Branches };

struct TraceOptions {
  bool skip_bad = false;  // skip and count malformed records instead of failing
  SubagentMode subagents = SubagentMode::Inline;
  int64_t max_sessions = 0;  // keep only the first N sessions (0 = all)
};

// Loads a trace. spec:
// - "", "default" or "bundled": the bundled Claude Code sample (data/traces/claude_code_sample.tar.gz);
// - "bundled:<file>": another bundled file (bundled:mooncake_fast25_conversation_trace.jsonl.gz);
// - "synthetic[:k=v,...]": seeded synthetic agentic sessions (synthetic_trace.h);
// - "synthetic:agentx[,k=v,...]": sessions with sub-agent branches fitted to the AgentX corpus
//   (agentx_trace.h);
// - "random:input=N,output=N,n=N": fixed-length random requests (random_trace.h);
// - a path: a directory of session files, a .tar / .tar.gz, or one .json (Claude Code session) /
//   .jsonl (Mooncake) file, optionally .gz.
// Bundled traces are looked up in $DELTASERVE_DATA_DIR/traces, <source dir>/data/traces (compiled
// in), ./data/traces, then <exe dir>/../data/traces and <exe dir>/../share/deltaserve/traces.
// Errors name the file and line (or session file and request index).
Trace load_trace(const std::string& spec, const TraceOptions& options = {});

// The directory that holds the bundled traces (see load_trace); throws ds::Error if none is found.
std::string bundled_trace_dir();

}  // namespace ds
