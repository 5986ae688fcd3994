#include "tokenizer/chat_template.h"

#include <regex>

#include "core/check.h"

namespace ds::tok {

namespace {

// Kimi Linear's default system prompt when the checkpoint's template does not spell one.
constexpr const char* kDefaultSystemPrompt = "You are a helpful assistant";

// "<|x|>ROLE<|y|>" in the template source: (x, y).
std::optional<std::pair<std::string, std::string>> find_header(const std::string& tmpl,
                                                               const std::string& role) {
  const std::regex re("(<\\|[A-Za-z0-9_]+\\|>)" + role + "(<\\|[A-Za-z0-9_]+\\|>)");
  std::smatch m;
  if (!std::regex_search(tmpl, m, re)) return std::nullopt;
  return std::make_pair(m[1].str(), m[2].str());
}

}  // namespace

std::optional<ChatTemplate> ChatTemplate::make(const Tokenizer& tok, const TokenizerConfig& config,
                                               std::string* why) {
  ChatMarkers mk;
  std::string system_prompt = kDefaultSystemPrompt;
  const std::string& t = config.chat_template;
  const bool role_template = !t.empty() && find_header(t, "user").has_value();
  if (!role_template) {
    const XtmlMarkers x;
    bool xtml = true;
    for (const std::string* s : {&x.open, &x.close, &x.sep, &x.end}) xtml = xtml && tok.special_id(*s);
    if (xtml) return ChatTemplate(tok, ChatFormat::kXtml, std::move(mk), "");
  }
  if (role_template) {
    if (auto h = find_header(t, "user")) std::tie(mk.user, mk.middle) = *h;
    if (auto h = find_header(t, "assistant")) mk.assistant = h->first;
    if (auto h = find_header(t, "system")) mk.system = h->first;
    // The literal default system turn: "<sys>system<mid>TEXT<end>".
    const std::regex re(
        std::regex_replace(mk.system + "system" + mk.middle, std::regex(R"([|\[\]().*+?^$\\{}])"), R"(\$&)") +
        R"(([^<{}'"]+)(<\|[A-Za-z0-9_]+\|>))");
    std::smatch m;
    if (std::regex_search(t, m, re)) {
      system_prompt = m[1].str();
      mk.end = m[2].str();
    }
  }
  for (const std::string* s : {&mk.system, &mk.user, &mk.assistant, &mk.middle, &mk.end}) {
    if (!tok.special_id(*s)) {
      if (why) *why = "the tokenizer has no special token " + *s + " for the chat format";
      return std::nullopt;
    }
  }
  return ChatTemplate(tok, ChatFormat::kRoleMarkers, std::move(mk), std::move(system_prompt));
}

ChatTemplate::ChatTemplate(const Tokenizer& tok, ChatFormat format, ChatMarkers markers,
                           std::string default_system)
    : tok_(&tok), format_(format), markers_(std::move(markers)), default_system_(std::move(default_system)) {
  end_id_ = id(format_ == ChatFormat::kXtml ? xtml_.end : markers_.end);
  stop_ids_.push_back(end_id_);
  if (format_ == ChatFormat::kXtml) stop_ids_.push_back(id(xtml_.close));
}

int32_t ChatTemplate::id(const std::string& marker) const {
  auto v = tok_->special_id(marker);
  DS_CHECK(v.has_value(), "chat format needs special token {}", marker);
  return *v;
}

void ChatTemplate::turn(std::vector<int32_t>& out, int32_t marker, const std::string& header,
                        const std::string& body) const {
  out.push_back(marker);
  tok_->encode(header, SpecialMode::kPlainText, out);
  out.push_back(id(markers_.middle));
  tok_->encode(body, SpecialMode::kPlainText, out);
}

std::vector<int32_t> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                          const std::string& tools_json, bool add_generation_prompt) const {
  return format_ == ChatFormat::kXtml ? render_xtml(messages, tools_json, add_generation_prompt)
                                      : render_role_markers(messages, tools_json, add_generation_prompt);
}

std::vector<int32_t> ChatTemplate::render_role_markers(const std::vector<ChatMessage>& messages,
                                                       const std::string& tools_json,
                                                       bool add_generation_prompt) const {
  std::vector<int32_t> out;
  const int32_t sys = id(markers_.system), user = id(markers_.user), asst = id(markers_.assistant);
  if (!tools_json.empty()) {
    turn(out, sys, "tool_declare", tools_json);
    out.push_back(end_id_);
  }
  if (messages.empty() || messages.front().role != "system") {
    turn(out, sys, "system", default_system_);
    out.push_back(end_id_);
  }
  for (const ChatMessage& m : messages) {
    const int32_t marker = m.role == "user" ? user : m.role == "assistant" ? asst : sys;
    const std::string& header = m.name.empty() ? m.role : m.name;
    if (m.role == "tool") {
      turn(out, marker, header, "## Return of " + m.tool_call_id + "\n" + m.content);
    } else {
      turn(out, marker, header, m.content);
    }
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      out.push_back(id(markers_.calls_begin));
      for (const ToolCall& c : m.tool_calls) {
        out.push_back(id(markers_.call_begin));
        tok_->encode(c.id, SpecialMode::kPlainText, out);
        out.push_back(id(markers_.call_argument));
        tok_->encode(c.arguments, SpecialMode::kPlainText, out);
        out.push_back(id(markers_.call_end));
      }
      out.push_back(id(markers_.calls_end));
    }
    out.push_back(end_id_);
  }
  if (add_generation_prompt) {
    out.push_back(asst);
    tok_->encode("assistant", SpecialMode::kPlainText, out);
    out.push_back(id(markers_.middle));
  }
  return out;
}

}  // namespace ds::tok
