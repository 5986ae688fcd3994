// Kimi K3's XTML chat format (see chat_template.h for the layout).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/utf8.h"

namespace ds::tok {

namespace {

using OrderedJson = nlohmann::ordered_json;

// Attribute values: & first, then ".
std::string escape_attr(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// A JSON string as Python's json.dumps writes it (ASCII only: other code points as \uXXXX, UTF-16
// surrogate pairs above U+FFFF).
void python_json_string(std::string& out, std::string_view s) {
  out += '"';
  while (!s.empty()) {
    const Utf8Unit u = utf8_decode_one(s);
    s.remove_prefix(size_t(u.n_bytes));
    const char32_t cp = u.cp;
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp >= 0x20 && cp < 0x7F) {
      out += char(cp);
    } else if (cp <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", uint32_t(cp));
    } else {
      const uint32_t v = uint32_t(cp) - 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    }
  }
  out += '"';
}

// Python's json.dumps(value) with its default separators ", " and ": ", keys in the given order.
void python_json(std::string& out, const OrderedJson& v) {
  if (v.is_string()) {
    python_json_string(out, v.get_ref<const std::string&>());
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      python_json_string(out, k);
      out += ": ";
      python_json(out, x);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      python_json(out, v[i]);
    }
    out += ']';
  } else {
    out += v.dump();  // numbers, true, false, null
  }
}

const char* xtml_type(const OrderedJson& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
  return "array";
}

}  // namespace

std::vector<int32_t> ChatTemplate::render_xtml(const std::vector<ChatMessage>& messages,
                                               const std::string& tools_json,
                                               bool add_generation_prompt) const {
  std::vector<int32_t> out;
  const int32_t open = id(xtml_.open), close = id(xtml_.close), sep = id(xtml_.sep);
  auto text = [&](std::string_view s) { tok_->encode(s, SpecialMode::kPlainText, out); };
  auto open_tag = [&](const std::string& tag) {  // <|open|>tag<|sep|>
    out.push_back(open);
    text(tag);
    out.push_back(sep);
  };
  auto close_tag = [&](std::string_view name) {  // <|close|>name<|sep|>
    out.push_back(close);
    text(name);
    out.push_back(sep);
  };
  auto message_open = [&](const std::string& role, const std::string& attrs) {
    open_tag("message role=\"" + escape_attr(role) + "\"" + attrs);
  };
  auto message_close = [&] {
    close_tag("message");
    out.push_back(end_id_);
  };

  if (!tools_json.empty()) {
    nlohmann::json tools;  // keys sorted at every depth
    try {
      tools = nlohmann::json::parse(tools_json);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("tools are not valid JSON: {}", e.what()));
    }
    message_open("system", " type=\"tool-declare\"");
    text("# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n" + tools.dump() +
         "\n```");
    message_close();
  }

  const std::vector<ToolCall>* last_calls = nullptr;  // the latest assistant message's calls
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {
      // A run of tool results, put in the order of the calls they answer.
      size_t end = i;
      while (end < messages.size() && messages[end].role == "tool") ++end;
      std::vector<std::pair<size_t, const ChatMessage*>> run;  // (1-based call index, message)
      for (size_t j = i; j < end; ++j) {
        size_t index = j - i + 1;
        if (last_calls) {
          const auto it = std::find_if(last_calls->begin(), last_calls->end(), [&](const ToolCall& c) {
            return !c.id.empty() && c.id == messages[j].tool_call_id;
          });
          if (it != last_calls->end()) index = size_t(it - last_calls->begin()) + 1;
        }
        run.emplace_back(index, &messages[j]);
      }
      std::stable_sort(run.begin(), run.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [index, t] : run) {
        std::string tool = t->name;
        if (last_calls && index <= last_calls->size() && last_calls->at(index - 1).id == t->tool_call_id)
          tool = last_calls->at(index - 1).name;
        message_open("tool", fmt::format(" tool=\"{}\" index=\"{}\"", escape_attr(tool), index));
        text(t->content);
        message_close();
      }
      i = end - 1;
      continue;
    }
    const std::string name_attr = m.name.empty() ? "" : " name=\"" + escape_attr(m.name) + "\"";
    message_open(m.role, name_attr);
    if (m.role != "assistant") {
      text(m.content);
      message_close();
      continue;
    }
    if (!m.content.empty() || m.tool_calls.empty()) {
      open_tag("response");
      text(m.content);
      close_tag("response");
    }
    if (!m.tool_calls.empty()) {
      open_tag("tools");
      for (size_t c = 0; c < m.tool_calls.size(); ++c) {
        const ToolCall& call = m.tool_calls[c];
        open_tag(fmt::format("call tool=\"{}\" index=\"{}\"", escape_attr(call.name), c + 1));
        OrderedJson args;
        bool parsed = true;
        try {
          args = OrderedJson::parse(call.arguments.empty() ? "{}" : call.arguments);
        } catch (const nlohmann::json::exception&) {
          parsed = false;
        }
        if (parsed && args.is_object()) {
          for (const auto& [key, value] : args.items()) {
            open_tag(fmt::format("argument key=\"{}\" type=\"{}\"", escape_attr(key), xtml_type(value)));
            if (value.is_string()) {
              text(value.get_ref<const std::string&>());
            } else {
              std::string v;
              python_json(v, value);
              text(v);
            }
            close_tag("argument");
          }
        } else {  // not a JSON object: the client's text as it came
          open_tag("json type=\"object\"");
          text(call.arguments);
          close_tag("json");
        }
        close_tag("call");
      }
      close_tag("tools");
    }
    last_calls = &m.tool_calls;
    message_close();
  }
  if (add_generation_prompt) {
    message_open("assistant", "");
    open_tag("response");
  }
  return out;
}

}  // namespace ds::tok
