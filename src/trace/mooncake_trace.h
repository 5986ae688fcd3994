// Mooncake FAST'25 JSONL traces: one request per line with `timestamp` (ms), `input_length`,
// `output_length` and `hash_ids` of 512-token blocks; open loop by timestamp. Owns the checked
// invariant len(hash_ids) == ceil(input_length / 512) (true for every line of the public files).
#pragma once

#include <string_view>

#include "trace/trace.h"

namespace ds {

inline constexpr int kMooncakeBlockTokens = 512;

// Appends one single-turn session per line ("<name>:<line>", arrival_s = timestamp / 1000) to
// `trace` and sets block_tokens = 512, closed_loop = false. Ids are namespaced by file, so two
// files never share blocks. Blank lines are ignored. A malformed line throws ds::Error
// "<name>:<line>: ..." unless options.skip_bad (then it is skipped and counted).
void parse_mooncake_jsonl(std::string_view text, const std::string& name, const TraceOptions& options,
                          Trace& trace);

}  // namespace ds
