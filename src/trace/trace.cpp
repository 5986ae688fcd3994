#include "trace/trace.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/check.h"
#include "trace/agentx_trace.h"
#include "trace/block_hash.h"
#include "trace/claude_code_trace.h"
#include "trace/mooncake_trace.h"
#include "trace/random_trace.h"
#include "trace/synthetic_trace.h"
#include "trace/trace_files.h"

#ifndef DS_SOURCE_DIR
#define DS_SOURCE_DIR ""
#endif

namespace ds {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultBundled = "claude_code_sample.tar.gz";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Builds a Trace from files of one format (*.json: Claude Code sessions, *.jsonl: Mooncake).
Trace parse_files(const std::vector<TraceFile>& files, const TraceOptions& options) {
  Trace trace;
  bool any_json = false, any_jsonl = false;
  for (const TraceFile& f : files) {
    std::string_view base = strip_gz(f.name);
    if (!base.empty() && base.back() == ']') base.remove_suffix(1);  // "<archive>[member]"
    bool jsonl = ends_with(base, ".jsonl");
    if (!jsonl && !ends_with(base, ".json"))
      fail(
          "{}: unknown trace format (expected .json Claude Code session, .jsonl Mooncake, .tar, .tar.gz or a "
          "directory)",
          f.name);
    if ((jsonl && any_json) || (!jsonl && any_jsonl))
      fail("{}: cannot mix Claude Code (.json) and Mooncake (.jsonl) files in one trace", f.name);
    if (jsonl) {
      parse_mooncake_jsonl(f.text, f.name, options, trace);
    } else {
      parse_claude_code_session(f.text, f.name, options, trace.sessions.empty(), trace);
    }
    any_json |= !jsonl;
    any_jsonl |= jsonl;
    if (options.max_sessions > 0 && static_cast<int64_t>(trace.sessions.size()) >= options.max_sessions)
      break;
  }
  if (options.max_sessions > 0 && static_cast<int64_t>(trace.sessions.size()) > options.max_sessions)
    trace.sessions.resize(static_cast<size_t>(options.max_sessions));
  return trace;
}

}  // namespace

std::vector<int32_t> turn_tokens(const TraceTurn& turn, int block_tokens) {
  DS_CHECK(block_tokens >= 1, "turn_tokens: block_tokens = {} must be >= 1", block_tokens);
  int64_t n = turn.n_input_tokens;
  DS_CHECK(n >= 0, "turn_tokens: n_input_tokens = {} must be >= 0", n);
  int64_t need = (n + block_tokens - 1) / block_tokens;
  DS_CHECK(static_cast<int64_t>(turn.hash_ids.size()) >= need,
           "turn_tokens: {} hash ids cover fewer than n_input_tokens = {} tokens at {} tokens per block",
           turn.hash_ids.size(), n, block_tokens);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int64_t b = 0; b < need; ++b) {
    const uint64_t base = splitmix64(turn.hash_ids[static_cast<size_t>(b)]);
    const int64_t begin = b * block_tokens, end = std::min(n, begin + block_tokens);
    for (int64_t i = begin; i < end; ++i) tokens[static_cast<size_t>(i)] = block_token_id_at(base, i - begin);
  }
  return tokens;
}

std::string bundled_trace_dir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("DELTASERVE_DATA_DIR"); env && *env)
    candidates.push_back(fs::path(env) / "traces");
  if (*DS_SOURCE_DIR) candidates.push_back(fs::path(DS_SOURCE_DIR) / "data" / "traces");
  candidates.push_back(fs::path("data") / "traces");
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "data" / "traces");
    candidates.push_back(exe.parent_path().parent_path() / "share" / "deltaserve" / "traces");
  }
  for (const fs::path& c : candidates)
    if (fs::exists(c / kDefaultBundled, ec)) return c.string();
  std::string tried;
  for (const fs::path& c : candidates) tried += (tried.empty() ? "" : ", ") + c.string();
  fail(
      "bundled traces not found (looked for {} in: {}); set DELTASERVE_DATA_DIR to the folder holding "
      "traces/",
      kDefaultBundled, tried);
}

Trace load_trace(const std::string& spec, const TraceOptions& options) {
  if (spec.rfind("random:", 0) == 0) return generate_random_trace(parse_random_params(spec.substr(7)));
  if (spec == "synthetic:agentx" || spec.rfind("synthetic:agentx,", 0) == 0) {
    Trace trace = generate_agentx_trace(parse_agentx_params(spec.size() > 16 ? spec.substr(17) : ""));
    if (options.max_sessions > 0 && static_cast<int64_t>(trace.sessions.size()) > options.max_sessions)
      trace.sessions.resize(static_cast<size_t>(options.max_sessions));
    return trace;
  }
  if (spec.rfind("synthetic", 0) == 0 && (spec.size() == 9 || spec[9] == ':')) {
    Trace trace = generate_synthetic_trace(parse_synthetic_params(spec.size() > 9 ? spec.substr(10) : ""));
    if (options.max_sessions > 0 && static_cast<int64_t>(trace.sessions.size()) > options.max_sessions)
      trace.sessions.resize(static_cast<size_t>(options.max_sessions));
    return trace;
  }
  std::string path = spec, source = spec;
  if (spec.empty() || spec == "default" || spec == "bundled") {
    path = (fs::path(bundled_trace_dir()) / kDefaultBundled).string();
    source = std::string("bundled:") + kDefaultBundled;
  } else if (spec.rfind("bundled:", 0) == 0) {
    std::string file = spec.substr(8);
    if (file.empty() || file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      fail("trace `{}`: expected bundled:<file name in data/traces>", spec);
    path = (fs::path(bundled_trace_dir()) / file).string();
  }
  Trace trace = parse_files(read_trace_files(path), options);
  trace.source = source;
  if (trace.sessions.empty())
    fail("{}: trace holds no valid requests{}", path,
         trace.n_skipped_bad ? fmt::format(" ({} malformed records skipped)", trace.n_skipped_bad) : "");
  return trace;
}

}  // namespace ds
