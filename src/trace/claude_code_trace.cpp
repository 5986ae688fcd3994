#include "trace/claude_code_trace.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/json_cursor.h"

namespace ds {
namespace {

constexpr int kMaxSubagentDepth = 8;
constexpr int64_t kMaxInputTokens = int64_t{1} << 26;  // 67M tokens: far past any context length
constexpr int64_t kMaxBlockTokens = int64_t{1} << 20;

// One request as written in the file, before validation.
struct RawRequest {
  size_t offset = 0;  // byte offset of the request object (for the line number)
  std::string label;  // "request 12" or "request 3.4" (sub-agent request)
  bool subagent = false;
  double t_s = 0;
  bool has_in = false, has_out = false, has_ids = false, has_t = false;
  int64_t n_in = 0, n_out = 0;
  std::vector<int64_t> ids;
  double think_s = 0, api_s = 0, duration_s = -1;
  std::string agent_id;
  std::vector<RawRequest> children;  // sub-agent requests
};

struct SessionHeader {
  std::string id;
  int64_t block_size = 64;
  bool local_scope = true;
};

double nonneg_number(JsonCursor& cur, std::string_view field) {
  double v = cur.number(field);
  if (v < 0) cur.error(fmt::format("field `{}` = {} must be >= 0", field, v));
  return v;
}

RawRequest parse_request(JsonCursor& cur, std::string label, int depth);

void parse_request_list(JsonCursor& cur, const std::string& prefix, int depth, std::vector<RawRequest>& out) {
  if (depth > kMaxSubagentDepth)
    cur.error(fmt::format("sub-agents nested deeper than {}", kMaxSubagentDepth));
  if (cur.peek() != '[') cur.error("field `requests` must be an array");
  cur.begin_array();
  bool first = true;
  while (cur.next_element(first))
    out.push_back(parse_request(cur, fmt::format("{}{}", prefix, out.size()), depth));
}

RawRequest parse_request(JsonCursor& cur, std::string label, int depth) {
  RawRequest r;
  r.label = std::move(label);
  if (cur.peek() != '{') cur.error(fmt::format("{}: expected an object", r.label));
  r.offset = cur.offset();
  cur.begin_object();
  bool first = true;
  std::string_view key;
  while (cur.next_member(first, key)) {
    if (key == "t") {
      r.t_s = nonneg_number(cur, "t");
      r.has_t = true;
    } else if (key == "type") {
      r.subagent = cur.string_value() == "subagent";
    } else if (key == "in") {
      r.n_in = cur.integer("in");
      r.has_in = true;
    } else if (key == "out") {
      r.n_out = cur.integer("out");
      r.has_out = true;
    } else if (key == "hash_ids") {
      if (cur.peek() != '[') cur.error(fmt::format("{}: field `hash_ids` must be an array", r.label));
      cur.begin_array();
      bool f = true;
      while (cur.next_element(f)) r.ids.push_back(cur.integer("hash_ids[]"));
      r.has_ids = true;
    } else if (key == "think_time") {
      r.think_s = nonneg_number(cur, "think_time");
    } else if (key == "api_time") {
      r.api_s = nonneg_number(cur, "api_time");
    } else if (key == "duration_ms") {  // null in a few public files: unknown, summed from the requests
      if (cur.peek() == 'n')
        cur.skip_value();
      else
        r.duration_s = nonneg_number(cur, "duration_ms") / 1000.0;
    } else if (key == "agent_id") {
      r.agent_id = cur.string_value();
    } else if (key == "requests") {
      parse_request_list(cur, r.label + ".", depth + 1, r.children);
    } else {
      cur.skip_value();
    }
  }
  return r;
}

// First problem of a (non-sub-agent) request, or "" if it is well formed.
std::string request_problem(const RawRequest& r, int64_t block) {
  if (!r.has_t) return "missing field `t`";
  if (!r.has_in) return "missing field `in`";
  if (!r.has_out) return "missing field `out`";
  if (!r.has_ids) return "missing field `hash_ids`";
  if (r.n_in < 1 || r.n_in > kMaxInputTokens)
    return fmt::format("field `in` = {} must be in [1, {}]", r.n_in, kMaxInputTokens);
  if (r.n_out < 0 || r.n_out > kMaxInputTokens)
    return fmt::format("field `out` = {} must be in [0, {}]", r.n_out, kMaxInputTokens);
  int64_t lo = r.n_in / block, hi = (r.n_in + block - 1) / block;
  int64_t n = static_cast<int64_t>(r.ids.size());
  if (n != lo && n != hi)
    return fmt::format("`hash_ids` has {} ids but `in` = {} needs {} (full {}-token blocks){}", n, r.n_in, lo,
                       block, lo == hi ? "" : fmt::format(" or {} (with the partial last block)", hi));
  for (int64_t id : r.ids)
    if (id < 0) return fmt::format("`hash_ids` holds a negative id {}", id);
  return {};
}

// Builds turns from raw requests; sub-agents go inline or into `extra` sessions.
struct SessionBuilder {
  const SessionHeader& header;
  const TraceOptions& options;
  const JsonCursor& cur;
  const std::string& name;
  Trace& trace;
  uint64_t ns = 0;       // namespace of the file's hash ids
  uint64_t tail_ns = 0;  // namespace of unique tail-block ids (always per file)
  uint64_t ordinal = 0;  // request counter for unique tail ids

  TraceTurn make_turn(const RawRequest& r, double arrival_s, double think_s) {
    TraceTurn turn;
    turn.arrival_s = arrival_s;
    turn.think_time_s = think_s;
    turn.n_input_tokens = r.n_in;
    turn.n_output_tokens = r.n_out;
    turn.hash_ids.reserve(r.ids.size() + 1);
    for (int64_t id : r.ids) turn.hash_ids.push_back(namespaced_block_id(ns, static_cast<uint64_t>(id)));
    if (static_cast<int64_t>(turn.hash_ids.size()) * header.block_size < r.n_in)
      turn.hash_ids.push_back(unique_tail_block_id(tail_ns, ordinal));
    ++ordinal;
    return turn;
  }

  // False if the request is bad and skipped (throws instead unless skip_bad).
  bool check(const RawRequest& r) {
    std::string problem = request_problem(r, header.block_size);
    if (problem.empty()) return true;
    if (!options.skip_bad) fail("{}:{}: {}: {}", name, cur.line_at(r.offset), r.label, problem);
    ++trace.n_skipped_bad;
    return false;
  }

  // Sub-agent wall time: duration_ms if given, else the sum of its requests' api + think times.
  static double subagent_duration_s(const RawRequest& s) {
    if (s.duration_s >= 0) return s.duration_s;
    double d = 0;
    for (const RawRequest& c : s.children) d += c.api_s + c.think_s;
    return d;
  }

  // Appends `reqs` (starting at session time `base_s`) to `turns`. A sub-agent entry's `t` is its
  // end (checked on the public files: t - duration_ms/1000 is the previous request's end). With
  // `branches` (top level, SubagentMode::Branches) a sub-agent becomes a TraceBranch of the session:
  // spawned after the previous turn, joined by the next one (none: background); an entry with no
  // previous turn is dropped, as AIPerf drops it. Nested sub-agents stay inline in their branch.
  void add(const std::vector<RawRequest>& reqs, double base_s, const std::string& session_id,
           std::vector<TraceTurn>& turns, std::vector<TraceSession>& extra,
           std::vector<TraceBranch>* branches = nullptr) {
    double sub_end_s = -1;       // latest sub-agent end since the previous request of this level
    double prev_end_s = base_s;  // recorded end of the previous request of this level
    size_t first_unjoined = branches ? branches->size() : 0;
    for (const RawRequest& r : reqs) {
      if (r.subagent) {
        double end = base_s + r.t_s;
        double start = std::max(0.0, end - subagent_duration_s(r));
        if (branches != nullptr) {
          if (turns.empty()) continue;
          TraceBranch b;
          b.spawn_after = static_cast<int32_t>(turns.size() - 1);
          b.start_offset_s = std::max(0.0, start - prev_end_s);
          add(r.children, start, session_id, b.turns, extra);
          if (!b.turns.empty()) {
            b.turns.front().think_time_s = 0;
            branches->push_back(std::move(b));
          }
          sub_end_s = std::max(sub_end_s, end);
        } else if (options.subagents == SubagentMode::Inline) {
          add(r.children, start, session_id, turns, extra);
          sub_end_s = std::max(sub_end_s, end);
        } else {
          std::string sub_id = session_id + "/" + (r.agent_id.empty() ? r.label : r.agent_id);
          TraceSession sub{sub_id, {}, {}};
          add(r.children, start, sub_id, sub.turns, extra);
          if (!sub.turns.empty()) extra.push_back(std::move(sub));
        }
        continue;
      }
      if (!check(r)) continue;
      // The parent waited for its sub-agents, so it thinks only from the last one's end.
      double think = sub_end_s >= 0 ? std::max(0.0, base_s + r.t_s - sub_end_s) : r.think_s;
      sub_end_s = -1;
      if (branches != nullptr) {
        for (size_t i = first_unjoined; i < branches->size(); ++i)
          (*branches)[i].join_before = static_cast<int32_t>(turns.size());
        first_unjoined = branches->size();
      }
      turns.push_back(make_turn(r, base_s + r.t_s, think));
      prev_end_s = base_s + r.t_s + r.api_s;
    }
  }
};

SessionHeader parse_header_and_requests(JsonCursor& cur, const std::string& name,
                                        std::vector<RawRequest>& reqs) {
  SessionHeader h;
  bool has_requests = false;
  if (cur.peek() != '{') cur.error("a session file must hold one JSON object");
  cur.begin_object();
  bool first = true;
  std::string_view key;
  while (cur.next_member(first, key)) {
    if (key == "id") {
      h.id = cur.string_value();
    } else if (key == "block_size") {
      h.block_size = cur.integer("block_size");
      if (h.block_size < 1 || h.block_size > kMaxBlockTokens)
        cur.error(fmt::format("field `block_size` = {} must be in [1, {}]", h.block_size, kMaxBlockTokens));
    } else if (key == "hash_id_scope") {
      std::string scope = cur.string_value();
      if (scope != "local" && scope != "global")
        cur.error(fmt::format("field `hash_id_scope` = \"{}\" must be \"local\" or \"global\"", scope));
      h.local_scope = scope == "local";
    } else if (key == "requests") {
      parse_request_list(cur, "request ", 0, reqs);
      has_requests = true;
    } else {
      cur.skip_value();
    }
  }
  cur.expect_end();
  if (!has_requests) cur.error("missing field `requests`");
  if (h.id.empty()) {  // file stem
    std::string_view n = name;
    size_t slash = n.find_last_of("/[");
    if (slash != std::string_view::npos) n = n.substr(slash + 1);
    h.id = std::string(n.substr(0, n.find('.')));
  }
  return h;
}

}  // namespace

void parse_claude_code_session(std::string_view text, const std::string& name, const TraceOptions& options,
                               bool first_file, Trace& trace) {
  JsonCursor cur(text, name);
  std::vector<RawRequest> reqs;
  SessionHeader header;
  try {
    header = parse_header_and_requests(cur, name, reqs);
  } catch (const Error&) {
    if (!options.skip_bad) throw;
    ++trace.n_skipped_bad;
    return;
  }
  if (first_file) trace.block_tokens = static_cast<int>(header.block_size);
  if (header.block_size != trace.block_tokens) {
    if (!options.skip_bad)
      fail("{}: block_size {} differs from {} in earlier trace files", name, header.block_size,
           trace.block_tokens);
    ++trace.n_skipped_bad;
    return;
  }
  // Local ids live in the session's namespace; "global" ids share one namespace across files.
  SessionBuilder b{header, options, cur, name, trace};
  b.ns = name_namespace(header.local_scope ? header.id : std::string_view("global"));
  b.tail_ns = name_namespace(name);
  TraceSession session{header.id, {}, {}};
  std::vector<TraceSession> extra;
  b.add(reqs, 0.0, header.id, session.turns, extra,
        options.subagents == SubagentMode::Branches ? &session.branches : nullptr);
  if (!session.turns.empty()) trace.sessions.push_back(std::move(session));
  for (TraceSession& s : extra) trace.sessions.push_back(std::move(s));
}

}  // namespace ds
