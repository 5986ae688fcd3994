// Trace: the workload a replay drives — sessions of turns (agentic, closed loop) or independent
// requests with arrival times (open loop). Prompts are materialised as deterministic token ids per
// hash-id block, so identical hash-id prefixes give identical token prefixes in the prefix tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct TraceTurn {
  double arrival_s = 0;          // open loop: absolute arrival; closed loop: offset in its session
  double think_time_s = 0;       // closed loop: pause after the previous turn finished
  int64_t n_input_tokens = 0;    // prompt length in tokens
  int64_t n_output_tokens = 0;   // tokens to decode
  std::vector<uint64_t> hash_ids;  // one per block_tokens-token block of the prompt (last may be partial)
};

// Deterministic prompt token ids of a turn: block b contributes block_tokens ids derived from
// (hash_ids[b], position in block) by a fixed mixing function, truncated to n_input_tokens.
// Materialised on demand (a 142k-token prompt is 568 KB) rather than stored in the trace.
std::vector<int32_t> turn_tokens(const TraceTurn& turn, int block_tokens);

struct TraceSession {
  std::string id;                // session id (file name, sub-agent suffix, or generated)
  std::vector<TraceTurn> turns;  // in order
};

struct Trace {
  std::string source;            // path or "bundled:<name>" or "synthetic:<params>"
  int block_tokens = 64;         // tokens per hash-id block (64 Claude Code, 512 Mooncake)
  bool closed_loop = true;       // sessions driven by think time (true) or arrivals (false)
  std::vector<TraceSession> sessions;
  int64_t n_skipped_bad = 0;     // malformed records skipped under --skip-bad
};

}  // namespace ds
