#include "engine/request_batch.h"

#include <algorithm>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"

namespace ds {
namespace {

using json = nlohmann::json;

int64_t as_int(const json& v, const std::string& where, const char* key) {
  DS_CHECK(v.is_number_integer(), "{}: \"{}\" must be an integer, got {}", where, key, v.dump());
  return v.get<int64_t>();
}

float as_float(const json& v, const std::string& where, const char* key) {
  DS_CHECK(v.is_number(), "{}: \"{}\" must be a number, got {}", where, key, v.dump());
  return v.get<float>();
}

std::vector<int32_t> as_ids(const json& v, const std::string& where, const char* key, int64_t vocab) {
  DS_CHECK(v.is_array(), "{}: \"{}\" must be an array of token ids", where, key);
  std::vector<int32_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    DS_CHECK(v[i].is_number_integer(), "{}: \"{}\"[{}] is not an integer: {}", where, key, i, v[i].dump());
    const int64_t t = v[i].get<int64_t>();
    DS_CHECK(t >= 0 && t < vocab, "{}: \"{}\"[{}] = {} is outside the vocabulary [0, {})", where, key, i, t,
             vocab);
    out.push_back(int32_t(t));
  }
  return out;
}

BatchRequest parse_line(const json& j, const std::string& where, int64_t vocab) {
  DS_CHECK(j.is_object(), "{}: expected a JSON object", where);
  BatchRequest r;
  bool has_id = false, has_tokens = false, has_max = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "id") {
      DS_CHECK(v.is_string() && !v.get<std::string>().empty(), "{}: \"id\" must be a non-empty string",
               where);
      r.id = v.get<std::string>();
      has_id = true;
    } else if (key == "tokens") {
      r.tokens = as_ids(v, where, "tokens", vocab);
      has_tokens = true;
    } else if (key == "max_tokens") {
      r.max_tokens = as_int(v, where, "max_tokens");
      DS_CHECK(r.max_tokens >= 1 && r.max_tokens <= (1 << 24),
               "{}: \"max_tokens\" must be in [1, 2^24], got {}", where, r.max_tokens);
      has_max = true;
    } else if (key == "after") {
      DS_CHECK(v.is_string(), "{}: \"after\" must be a request id (string)", where);
      r.after = v.get<std::string>();
    } else if (key == "extends") {
      DS_CHECK(v.is_boolean(), "{}: \"extends\" must be true or false", where);
      r.extends = v.get<bool>();
    } else if (key == "temperature") {
      r.sampling.temperature = as_float(v, where, "temperature");
    } else if (key == "top_k") {
      r.sampling.top_k = int32_t(std::clamp<int64_t>(as_int(v, where, "top_k"), -1, INT32_MAX));
    } else if (key == "top_p") {
      r.sampling.top_p = as_float(v, where, "top_p");
    } else if (key == "min_p") {
      r.sampling.min_p = as_float(v, where, "min_p");
    } else if (key == "seed") {
      const int64_t s = as_int(v, where, "seed");
      DS_CHECK(s >= 0, "{}: \"seed\" must be >= 0, got {}", where, s);
      r.sampling.seed = uint64_t(s);
    } else if (key == "stop_token_ids") {
      r.sampling.stop_token_ids = as_ids(v, where, "stop_token_ids", vocab);
    } else {
      fail("{}: unknown key \"{}\"", where, key);
    }
  }
  DS_CHECK(has_id && has_tokens && has_max, "{}: \"id\", \"tokens\" and \"max_tokens\" are required", where);
  DS_CHECK(!r.tokens.empty() || r.extends, "{}: \"tokens\" is empty", where);
  DS_CHECK(!r.extends || !r.after.empty(), "{}: \"extends\" needs \"after\"", where);
  try {
    r.sampling.validate();
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  return r;
}

}  // namespace

std::vector<BatchRequest> parse_batch_requests(std::string_view text, const std::string& source,
                                               int64_t vocab) {
  std::vector<BatchRequest> out;
  std::set<std::string> ids;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", where, e.what());
    }
    BatchRequest r = parse_line(j, where, vocab);
    DS_CHECK(r.after.empty() || ids.count(r.after),
             "{}: \"after\": \"{}\" is not the id of an earlier request", where, r.after);
    DS_CHECK(ids.insert(r.id).second, "{}: duplicate id \"{}\"", where, r.id);
    out.push_back(std::move(r));
  }
  DS_CHECK(!out.empty(), "{}: no requests", source);
  return out;
}

std::vector<BatchResult> run_batch(Engine& engine, const std::vector<BatchRequest>& requests) {
  DS_CHECK(engine.idle(), "run_batch: the engine is busy");
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < requests.size(); ++i) index[requests[i].id] = i;
  std::vector<BatchResult> results(requests.size());
  std::vector<std::vector<int32_t>> all_tokens(requests.size());  // prompt + output, when done
  std::vector<bool> done(requests.size(), false), started(requests.size(), false);
  auto start = [&](size_t i) {
    const BatchRequest& b = requests[i];
    Request r;
    r.id = RequestId(i) + 1;
    if (b.extends) r.tokens = all_tokens[index.at(b.after)];
    r.tokens.insert(r.tokens.end(), b.tokens.begin(), b.tokens.end());
    r.max_output_tokens = b.max_tokens;
    r.sampling = b.sampling;
    results[i].id = b.id;
    results[i].prompt_tokens = int64_t(r.tokens.size());
    started[i] = true;
    engine.add(std::move(r));
  };
  auto start_ready = [&] {
    for (size_t i = 0; i < requests.size(); ++i)
      if (!started[i] && (requests[i].after.empty() || done[index.at(requests[i].after)])) start(i);
  };
  start_ready();
  while (!engine.idle()) {
    EngineEvents ev = engine.step();
    auto finish = [&](const Request& r, const char* reason) {
      const size_t i = size_t(r.id - 1);
      BatchResult& res = results[i];
      res.output_tokens.assign(r.tokens.begin() + r.n_prompt_tokens, r.tokens.end());
      res.cached_tokens = r.n_hit_tokens;
      res.finish_reason = reason;
      all_tokens[i] = r.tokens;
      done[i] = true;
    };
    for (const Request& r : ev.finished) finish(r, r.stopped ? "stop" : "length");
    for (const Request& r : ev.rejected) finish(r, "rejected");
    start_ready();
  }
  for (size_t i = 0; i < requests.size(); ++i)
    DS_CHECK(done[i], "run_batch: request \"{}\" never ran", requests[i].id);
  return results;
}

std::string format_batch_results(const std::vector<BatchResult>& results) {
  std::string out;
  for (const BatchResult& r : results) {
    nlohmann::ordered_json j = {{"id", r.id},
                                {"output_tokens", r.output_tokens},
                                {"cached_tokens", r.cached_tokens},
                                {"prompt_tokens", r.prompt_tokens},
                                {"finish_reason", r.finish_reason}};
    out += j.dump() + "\n";
  }
  return out;
}

}  // namespace ds
