// Fuzz target: arbitrary bytes as a Claude Code session file and as Mooncake JSONL, strict and
// with skip_bad. Any outcome but a ds::Error or a valid trace (a crash, a sanitizer report, an
// escaped exception of another type) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "trace/claude_code_trace.h"
#include "trace/mooncake_trace.h"
#include "trace/trace_stats.h"

namespace {

void check_trace(const ds::Trace& t) {
  for (const ds::TraceSession& s : t.sessions)
    for (const ds::TraceTurn& turn : s.turns) {
      size_t need = static_cast<size_t>((turn.n_input_tokens + t.block_tokens - 1) / t.block_tokens);
      if (turn.hash_ids.size() != need || turn.n_input_tokens < 1 || turn.n_output_tokens < 0)
        __builtin_trap();
      if (turn.n_input_tokens <= 4096 &&
          ds::turn_tokens(turn, t.block_tokens).size() != size_t(turn.n_input_tokens))
        __builtin_trap();
    }
  double rate = ds::theoretical_hit_rate(t);
  if (!(rate >= 0 && rate <= 1)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool skip : {false, true}) {
    ds::TraceOptions opt;
    opt.skip_bad = skip;
    opt.subagents = skip ? ds::SubagentMode::Sessions : ds::SubagentMode::Inline;
    try {
      ds::Trace t;
      ds::parse_claude_code_session(text, "fuzz.json", opt, true, t);
      check_trace(t);
    } catch (const ds::Error&) {
    }
    try {
      ds::Trace t;
      ds::parse_mooncake_jsonl(text, "fuzz.jsonl", opt, t);
      check_trace(t);
    } catch (const ds::Error&) {
    }
  }
  return 0;
}
