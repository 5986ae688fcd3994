// Claude Code "weka" session traces (kv-cache-tester / InferenceX AgentX): one JSON file per
// session, 64-token hash-id blocks with per-session ("local") ids. Owns the mapping of one session
// file to Trace sessions: ids namespaced by session, sub-agents placed per SubagentMode.
#pragma once

#include <string_view>

#include "trace/trace.h"

namespace ds {

// Appends the session(s) of one session file to `trace` (sets trace.block_tokens from the file's
// `block_size`; a different block size than earlier files is an error). `name` is used in errors
// ("<name>:<line>: request <i>: ..."). Malformed requests throw ds::Error unless
// options.skip_bad, in which case the request (or, for a syntax error, the whole file) is skipped
// and counted in trace.n_skipped_bad. `first_file`: no session holds trace.block_tokens yet, so
// this file sets it.
void parse_claude_code_session(std::string_view text, const std::string& name, const TraceOptions& options,
                               bool first_file, Trace& trace);

}  // namespace ds
