// Seeded synthetic agentic trace: closed-loop sessions whose every turn's prompt is the previous
// prompt + its output + new tool results, on a system prompt shared by all sessions. Defaults
// match the medians SemiAnalysis InferenceX published for its recorded Claude Code traces (142k
// input and 444 output tokens per turn, 65 turns per session).
// Same params => same trace, bit for bit, on every platform (own RNG, no <random> distributions).
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace ds {

inline constexpr int64_t kMaxSyntheticTraceBytes = int64_t{4} << 30;  // estimated size bound

struct SyntheticTraceParams {
  int64_t sessions = 32;      // number of sessions
  int64_t turns = 65;         // median turns per session (lognormal, sigma 0.5, >= 2)
  int64_t input = 142000;     // median prompt tokens over all turns (met by calibrating
                              // the tool-result sizes, compaction included when possible)
  int64_t output = 444;       // median output tokens per turn (lognormal, sigma 1.0)
  int64_t system = 17216;     // shared system prompt + tool definitions, tokens
  double think = 10.0;        // median think time before a turn, s (lognormal, sigma 1.5;
                              // 10 s is the median of the Claude Code sessions)
  int64_t context = 1000000;  // max context: a longer prompt is compacted (restarts the
                              // session's content after the system prompt)
  uint64_t seed = 1;
  int block = 64;  // tokens per hash-id block
};

// Parses "k=v,k=v" (keys as the field names above); "" gives the defaults. Throws ds::Error naming
// a bad key or value.
SyntheticTraceParams parse_synthetic_params(const std::string& kv);

// Generates the trace (source = "synthetic:<all params>").
Trace generate_synthetic_trace(const SyntheticTraceParams& params);

}  // namespace ds
