#include "server/openai_api.h"

#include <fmt/format.h>

#include <cmath>

namespace ds {

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& msg) {
  throw ApiError(400, fmt::format("'{}': {}", param, msg), param);
}

const Json* field(const Json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t get_int(const Json& j, const char* name, int64_t lo, int64_t hi) {
  const Json& v = j.at(name);
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    bad(name, "must be an integer");
  const double d = v.get<double>();
  if (d < double(lo) || d > double(hi))
    bad(name, fmt::format("must be in [{}, {}], got {}", lo, hi, v.dump()));
  return v.is_number_integer() ? v.get<int64_t>() : int64_t(d);
}

double get_num(const Json& j, const char* name, double lo, double hi) {
  const Json& v = j.at(name);
  if (!v.is_number()) bad(name, "must be a number");
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) bad(name, fmt::format("must be in [{}, {}], got {}", lo, hi, v.dump()));
  return d;
}

bool get_bool(const Json& j, const char* name) {
  const Json& v = j.at(name);
  if (!v.is_boolean()) bad(name, "must be a boolean");
  return v.get<bool>();
}

std::vector<int32_t> token_list(const Json& v, const char* name) {
  std::vector<int32_t> out;
  for (const Json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
      bad(name, "must be a list of non-negative integer token ids");
    out.push_back(int32_t(t.get<int64_t>()));
  }
  return out;
}

// Message content: a string, or a list of {"type": "text", "text": ...} parts.
std::string content_text(const Json& c, const std::string& where) {
  if (c.is_null()) return {};
  if (c.is_string()) return c.get<std::string>();
  if (c.is_array()) {
    std::string s;
    for (const Json& part : c) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string())
        bad(where, "only text content parts are supported");
      s += part["text"].get<std::string>();
    }
    return s;
  }
  bad(where, "must be a string or a list of text parts");
}

}  // namespace

ApiError::ApiError(int s, std::string message, std::string p, std::string t)
    : std::runtime_error(std::move(message)), status(s), type(std::move(t)), param(std::move(p)) {}

std::string ApiError::json() const {
  Json e = {{"message", what()},
            {"type", type},
            {"param", param.empty() ? Json(nullptr) : Json(param)},
            {"code", status}};
  return Json{{"error", e}}.dump();
}

GenerationRequest parse_generation_request(const std::string& body, bool chat) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) throw ApiError(400, "request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "request body must be a JSON object");
  GenerationRequest r;
  r.chat = chat;
  if (const Json* m = field(j, "model")) {
    if (!m->is_string()) bad("model", "must be a string");
    r.model = m->get<std::string>();
  }
  if (chat) {
    const Json* msgs = field(j, "messages");
    if (!msgs || !msgs->is_array() || msgs->empty()) bad("messages", "must be a non-empty list");
    for (size_t i = 0; i < msgs->size(); ++i) {
      const Json& m = (*msgs)[i];
      const std::string where = fmt::format("messages[{}]", i);
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        bad(where, "needs a string 'role'");
      tok::ChatMessage cm;
      cm.role = m["role"].get<std::string>();
      if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" && cm.role != "tool" &&
          cm.role != "developer")
        bad(where + ".role", fmt::format("unknown role '{}'", cm.role));
      if (cm.role == "developer") cm.role = "system";
      cm.content = content_text(m.contains("content") ? m["content"] : Json(), where + ".content");
      if (m.contains("name") && m["name"].is_string()) cm.name = m["name"].get<std::string>();
      if (m.contains("tool_call_id") && m["tool_call_id"].is_string())
        cm.tool_call_id = m["tool_call_id"].get<std::string>();
      if (const Json* calls = field(m, "tool_calls")) {
        if (!calls->is_array()) bad(where + ".tool_calls", "must be a list");
        for (const Json& c : *calls) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
            bad(where + ".tool_calls", "each call needs a 'function' object");
          const Json& f = c["function"];
          tok::ToolCall tc;
          tc.id = c.value("id", "");
          tc.name = f.value("name", "");
          const Json args = f.value("arguments", Json(""));
          tc.arguments = args.is_string() ? args.get<std::string>() : args.dump();
          cm.tool_calls.push_back(std::move(tc));
        }
      }
      r.messages.push_back(std::move(cm));
    }
    if (const Json* tools = field(j, "tools")) {
      if (!tools->is_array()) bad("tools", "must be a list");
      if (!tools->empty()) r.tools_json = tools->dump();
    }
  } else {
    const Json* p = field(j, "prompt");
    if (!p) bad("prompt", "is required");
    if (p->is_string()) {
      r.prompt_text = p->get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
      r.prompt_ids = token_list(*p, "prompt");
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt_text = (*p)[0].get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_array()) {
      r.prompt_ids = token_list((*p)[0], "prompt");
    } else {
      bad("prompt",
          "must be a string, a list of token ids, or a list with one of those (batches are not supported)");
    }
    if (r.prompt_ids && r.prompt_ids->empty()) bad("prompt", "is empty");
  }
  const char* max_key = chat && field(j, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (field(j, max_key)) r.max_tokens = get_int(j, max_key, 1, int64_t(1) << 40);
  if (field(j, "temperature")) r.sampling.temperature = float(get_num(j, "temperature", 0, 100));
  if (field(j, "top_p")) r.sampling.top_p = float(get_num(j, "top_p", 1e-9, 1));
  if (field(j, "top_k")) {
    const int64_t k = get_int(j, "top_k", -1, INT32_MAX);
    r.sampling.top_k = k < 0 ? 0 : int32_t(k);
  }
  if (field(j, "min_p")) r.sampling.min_p = float(get_num(j, "min_p", 0, 1));
  if (field(j, "seed")) r.sampling.seed = uint64_t(get_int(j, "seed", INT64_MIN, INT64_MAX));
  if (field(j, "n") && get_int(j, "n", 1, 1000) != 1) bad("n", "only n = 1 is supported");
  if (field(j, "best_of") && get_int(j, "best_of", 1, 1000) != 1) bad("best_of", "only 1 is supported");
  if (field(j, "echo") && get_bool(j, "echo")) bad("echo", "is not supported");
  if (const Json* s = field(j, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (const Json& x : *s) {
        if (!x.is_string()) bad("stop", "must be a string or a list of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "must be a string or a list of strings");
    }
    for (const auto& x : r.stop)
      if (x.empty()) bad("stop", "stop strings must be non-empty");
  }
  if (const Json* s = field(j, "stop_token_ids")) {
    if (!s->is_array()) bad("stop_token_ids", "must be a list of token ids");
    r.stop_token_ids = token_list(*s, "stop_token_ids");
  }
  if (field(j, "ignore_eos")) r.ignore_eos = get_bool(j, "ignore_eos");
  if (field(j, "min_tokens")) r.min_tokens = get_int(j, "min_tokens", 0, int64_t(1) << 40);
  if (field(j, "stream")) r.stream = get_bool(j, "stream");
  if (const Json* so = field(j, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "must be an object");
    if (so->contains("include_usage")) r.include_usage = get_bool(*so, "include_usage");
  }
  if (field(j, "return_token_ids")) r.return_token_ids = get_bool(j, "return_token_ids");
  if (field(j, "skip_special_tokens")) r.skip_special_tokens = get_bool(j, "skip_special_tokens");
  if (chat) {
    const bool want = field(j, "logprobs") && get_bool(j, "logprobs");
    if (field(j, "top_logprobs")) {
      r.top_logprobs = int(get_int(j, "top_logprobs", 0, 20));
      if (!want) bad("top_logprobs", "needs \"logprobs\": true");
    } else if (want) {
      r.top_logprobs = 0;
    }
  } else if (field(j, "logprobs")) {
    r.top_logprobs = int(get_int(j, "logprobs", 0, 20));
  }
  return r;
}

}  // namespace ds
