// Trace statistics for reports and tests: the theoretical (infinite-cache) prefix hit of every
// turn and of the whole trace, and per-turn length medians. A hit counts whole blocks only: the
// longest run of leading full blocks whose id prefix appeared in any earlier turn (PrefixOracle).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace ds {

// Hit tokens of every turn, [session][turn], with an infinite cache: turns are visited in the
// order sessions × turns for closed-loop traces and by arrival_s (ties: session order) for open
// loop; a turn's full blocks become visible to all later turns. Only full blocks
// (n_input_tokens / block_tokens of them) are matched or inserted.
std::vector<std::vector<int64_t>> theoretical_hit_tokens(const Trace& trace);

// Sum of theoretical_hit_tokens over the sum of n_input_tokens (0 for an empty trace).
double theoretical_hit_rate(const Trace& trace);

struct TraceSummary {
  int64_t n_sessions = 0;
  int64_t n_turns = 0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double median_input_tokens = 0;   // over all turns
  double median_output_tokens = 0;  // over all turns
  double mean_output_tokens = 0;
  double median_turns_per_session = 0;
};

TraceSummary summarize(const Trace& trace);

// How deep a trace is and how much of it is sub-agent traffic (root turns + branch turns), for
// every replay report header: the numbers that decide whether a KV budget thrashes.
struct TraceDepth {
  int64_t n_sessions = 0;
  int64_t n_requests = 0;  // root turns + branch turns
  int64_t n_root_turns = 0;
  double subagent_share = 0;       // branch turns / requests
  double median_input_tokens = 0;  // all requests
  double p90_input_tokens = 0;
  double median_root_context_tokens = 0;  // root turns: input + output
  double root_over_256k = 0;              // share of root turns whose input + output exceeds 256k tokens
  double median_output_tokens = 0;        // all requests
  double median_root_turns = 0;           // per session
};
TraceDepth trace_depth(const Trace& trace);
std::string depth_line(const TraceDepth& d);  // one line for report headers

}  // namespace ds
