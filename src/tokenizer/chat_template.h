// Kimi's chat format (Kimi Linear / K2): every message is
//   <role marker>{name or role}<|im_middle|>{content}<|im_end|>
// with <|im_user|> for user, <|im_assistant|> for assistant and <|im_system|> for everything
// else (system, tool results, the tool_declare turn); tools are declared first as
//   <|im_system|>tool_declare<|im_middle|>{compact JSON of the tools}<|im_end|>
// a tool result's body is "## Return of {tool_call_id}\n{content}", an assistant's tool calls
// follow its text inside <|tool_calls_section_begin|> ... <|tool_calls_section_end|>, and when
// the first message is not a system message the default system prompt is inserted. The
// generation prompt is <|im_assistant|>assistant<|im_middle|>.
//
// Markers are special-token ids (never produced from message text); message text is encoded as
// plain text, so a user cannot inject a role marker. Marker names and the default system prompt
// are read from the checkpoint's chat_template where it spells them literally.
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

class ChatTemplate {
 public:
  // Markers from `config.chat_template` where it spells "<|x|>role<|y|>" literally, else the
  // defaults above; every marker must be a special token of `tok`. nullopt + `why` when the
  // tokenizer lacks them (e.g. a tokenizer without Kimi's role markers).
  static std::optional<ChatTemplate> make(const Tokenizer& tok, const TokenizerConfig& config,
                                          std::string* why);

  // tools_json: the request's "tools" array as compact JSON ("" = none).
  std::vector<int32_t> render(const std::vector<ChatMessage>& messages, const std::string& tools_json,
                              bool add_generation_prompt) const;

  const ChatMarkers& markers() const { return markers_; }
  const std::string& default_system_prompt() const { return default_system_; }
  int32_t end_id() const { return end_id_; }  // <|im_end|>: a stop token for chat

 private:
  ChatTemplate(const Tokenizer& tok, ChatMarkers markers, std::string default_system);
  int32_t id(const std::string& marker) const;
  void turn(std::vector<int32_t>& out, int32_t marker, const std::string& header,
            const std::string& body) const;

  const Tokenizer* tok_;
  ChatMarkers markers_;
  std::string default_system_;
  int32_t end_id_ = -1;
};

}  // namespace ds::tok
