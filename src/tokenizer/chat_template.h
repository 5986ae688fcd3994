// Kimi's chat formats, chosen by the checkpoint's special tokens.
//
// Kimi Linear / K2 (role markers): every message is
//   <role marker>{name or role}<|im_middle|>{content}<|im_end|>
// with <|im_user|> for user, <|im_assistant|> for assistant and <|im_system|> for everything
// else (system, tool results, the tool_declare turn); tools are declared first as
//   <|im_system|>tool_declare<|im_middle|>{compact JSON of the tools}<|im_end|>
// a tool result's body is "## Return of {tool_call_id}\n{content}", an assistant's tool calls
// follow its text inside <|tool_calls_section_begin|> ... <|tool_calls_section_end|>, and when
// the first message is not a system message the default system prompt is inserted. The
// generation prompt is <|im_assistant|>assistant<|im_middle|>. Marker names and the default
// system prompt are read from the checkpoint's chat_template where it spells them literally.
//
// Kimi K3 (XTML; the checkpoint ships no chat_template, its tokenizer has <|open|>, <|close|>,
// <|sep|> and <|end_of_msg|>): an XML-like markup whose brackets are those special tokens,
//   <|open|>message role="user"[ name="N"]<|sep|>{content}<|close|>message<|sep|><|end_of_msg|>
// an assistant message holds its text in a response channel,
//   <|open|>response<|sep|>{content}<|close|>response<|sep|>
// then its tool calls as
//   <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
//   <|open|>argument key="K" type="string|number|boolean|null|object|array"<|sep|>{value}
//   <|close|>argument<|sep|>...<|close|>call<|sep|><|close|>tools<|sep|>
// (a string value as raw text, anything else as Python-style JSON; arguments that are not a JSON
// object: <|open|>json type="object"<|sep|>{text}<|close|>json<|sep|>); a tool result is
//   <|open|>message role="tool" tool="NAME" index="I"<|sep|>{content}...
// with NAME and I from the assistant call it answers; tools are declared first in a system
// message of type "tool-declare" holding their deep-sorted compact JSON. Attribute values escape
// & then ". Thinking is off: the generation prompt opens the response channel,
//   <|open|>message role="assistant"<|sep|><|open|>response<|sep|>
// and <|close|> (the channel's end) and <|end_of_msg|> stop a chat completion.
//
// Markers are special-token ids (never produced from message text); message text is encoded as
// plain text, so a user cannot inject a marker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace ds::tok {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as the client sent it
};

struct ChatMessage {
  std::string role;  // system | user | assistant | tool (any other role renders like system)
  std::string content;
  std::string name;          // optional; replaces the role in the header
  std::string tool_call_id;  // tool results
  std::vector<ToolCall> tool_calls;
};

struct ChatMarkers {
  std::string system = "<|im_system|>";
  std::string user = "<|im_user|>";
  std::string assistant = "<|im_assistant|>";
  std::string middle = "<|im_middle|>";
  std::string end = "<|im_end|>";
  std::string calls_begin = "<|tool_calls_section_begin|>";
  std::string calls_end = "<|tool_calls_section_end|>";
  std::string call_begin = "<|tool_call_begin|>";
  std::string call_argument = "<|tool_call_argument_begin|>";
  std::string call_end = "<|tool_call_end|>";
};

struct XtmlMarkers {
  std::string open = "<|open|>";
  std::string close = "<|close|>";
  std::string sep = "<|sep|>";
  std::string end = "<|end_of_msg|>";
};

enum class ChatFormat { kRoleMarkers, kXtml };

class ChatTemplate {
 public:
  // Role markers from `config.chat_template` where it spells "<|x|>role<|y|>" literally; else
  // XTML when the tokenizer has its four markers; else the default role markers. Every marker
  // must be a special token of `tok`: nullopt + `why` when the tokenizer lacks them.
  static std::optional<ChatTemplate> make(const Tokenizer& tok, const TokenizerConfig& config,
                                          std::string* why);

  // tools_json: the request's "tools" array as compact JSON ("" = none).
  std::vector<int32_t> render(const std::vector<ChatMessage>& messages, const std::string& tools_json,
                              bool add_generation_prompt) const;

  ChatFormat format() const { return format_; }
  const ChatMarkers& markers() const { return markers_; }
  const std::string& default_system_prompt() const { return default_system_; }
  int32_t end_id() const { return end_id_; }  // <|im_end|> or <|end_of_msg|>: ends a message
  // Tokens that end a chat completion: end_id(), and for XTML also <|close|>.
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }

 private:
  ChatTemplate(const Tokenizer& tok, ChatFormat format, ChatMarkers markers, std::string default_system);
  int32_t id(const std::string& marker) const;
  void turn(std::vector<int32_t>& out, int32_t marker, const std::string& header,
            const std::string& body) const;
  std::vector<int32_t> render_role_markers(const std::vector<ChatMessage>& messages,
                                           const std::string& tools_json, bool add_generation_prompt) const;
  // chat_xtml.cpp
  std::vector<int32_t> render_xtml(const std::vector<ChatMessage>& messages, const std::string& tools_json,
                                   bool add_generation_prompt) const;

  const Tokenizer* tok_;
  ChatFormat format_;
  ChatMarkers markers_;
  XtmlMarkers xtml_;
  std::string default_system_;
  int32_t end_id_ = -1;
  std::vector<int32_t> stop_ids_;
};

}  // namespace ds::tok
