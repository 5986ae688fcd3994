#include "trace/mooncake_trace.h"

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/json_cursor.h"

namespace ds {
namespace {

constexpr int64_t kMaxInputTokens = int64_t{1} << 26;

TraceTurn parse_line(JsonCursor& cur, uint64_t ns) {
  TraceTurn turn;
  bool has_ts = false, has_in = false, has_out = false, has_ids = false;
  std::vector<int64_t> ids;
  if (cur.peek() != '{') cur.error("a line must hold one JSON object");
  cur.begin_object();
  bool first = true;
  std::string_view key;
  while (cur.next_member(first, key)) {
    if (key == "timestamp") {
      turn.arrival_s = cur.number("timestamp") / 1000.0;
      if (turn.arrival_s < 0)
        cur.error(fmt::format("field `timestamp` = {} ms must be >= 0", turn.arrival_s * 1000));
      has_ts = true;
    } else if (key == "input_length") {
      turn.n_input_tokens = cur.integer("input_length");
      has_in = true;
    } else if (key == "output_length") {
      turn.n_output_tokens = cur.integer("output_length");
      has_out = true;
    } else if (key == "hash_ids") {
      if (cur.peek() != '[') cur.error("field `hash_ids` must be an array");
      cur.begin_array();
      bool f = true;
      while (cur.next_element(f)) ids.push_back(cur.integer("hash_ids[]"));
      has_ids = true;
    } else {
      cur.skip_value();
    }
  }
  cur.expect_end();
  if (!has_ts) cur.error("missing field `timestamp`");
  if (!has_in) cur.error("missing field `input_length`");
  if (!has_out) cur.error("missing field `output_length`");
  if (!has_ids) cur.error("missing field `hash_ids`");
  if (turn.n_input_tokens < 1 || turn.n_input_tokens > kMaxInputTokens)
    cur.error(
        fmt::format("field `input_length` = {} must be in [1, {}]", turn.n_input_tokens, kMaxInputTokens));
  if (turn.n_output_tokens < 0 || turn.n_output_tokens > kMaxInputTokens)
    cur.error(
        fmt::format("field `output_length` = {} must be in [0, {}]", turn.n_output_tokens, kMaxInputTokens));
  int64_t need = (turn.n_input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<int64_t>(ids.size()) != need)
    cur.error(fmt::format("`hash_ids` has {} ids but `input_length` = {} needs ceil({}/{}) = {}", ids.size(),
                          turn.n_input_tokens, turn.n_input_tokens, kMooncakeBlockTokens, need));
  turn.hash_ids.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0) cur.error(fmt::format("`hash_ids` holds a negative id {}", id));
    turn.hash_ids.push_back(namespaced_block_id(ns, static_cast<uint64_t>(id)));
  }
  return turn;
}

}  // namespace

void parse_mooncake_jsonl(std::string_view text, const std::string& name, const TraceOptions& options,
                          Trace& trace) {
  trace.block_tokens = kMooncakeBlockTokens;
  trace.closed_loop = false;
  uint64_t ns = name_namespace(name);
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    JsonCursor cur(line, name, line_no);
    try {
      TraceTurn turn = parse_line(cur, ns);
      trace.sessions.push_back({fmt::format("{}:{}", name, line_no), {}, {}});
      trace.sessions.back().turns.push_back(std::move(turn));
    } catch (const Error&) {
      if (!options.skip_bad) throw;
      ++trace.n_skipped_bad;
    }
  }
}

}  // namespace ds
