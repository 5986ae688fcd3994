// The OpenAI-compatible request and response shapes: parsing and validation of
// /v1/completions and /v1/chat/completions bodies into a GenerationRequest (any problem is an
// ApiError: HTTP status + OpenAI-style JSON, never a crash), and the JSON of responses, stream
// chunks and errors. No HTTP and no engine here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sched/sampling_params.h"
#include "tokenizer/chat_template.h"

namespace ds {

// An error for the client: HTTP status and OpenAI's {"error": {message, type, param, code}}.
struct ApiError : std::runtime_error {
  int status;
  std::string type;   // invalid_request_error | not_found_error | server_error | ...
  std::string param;  // the offending field, or ""
  ApiError(int status, std::string message, std::string param = {},
           std::string type = "invalid_request_error");
  std::string json() const;
};

struct GenerationRequest {
  bool chat = false;
  std::string model;
  // Prompt: token ids (completions with a list of ints), or text (completions), or messages (chat).
  std::optional<std::vector<int32_t>> prompt_ids;
  std::optional<std::string> prompt_text;
  std::vector<tok::ChatMessage> messages;
  std::string tools_json;  // compact JSON of "tools", "" when none
  std::optional<int64_t> max_tokens;
  SamplingParams sampling;
  std::vector<std::string> stop;        // stop strings (matched on the decoded text)
  std::vector<int32_t> stop_token_ids;  // vLLM extension
  bool ignore_eos = false;              // vLLM extension: do not stop at the end-of-sequence tokens
  int64_t min_tokens = 0;               // vLLM extension (accepted; only honoured with ignore_eos)
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool return_token_ids = false;  // vLLM extension: token_ids per choice
  int top_logprobs = -1;          // < 0: no logprobs; completions "logprobs": k; chat "top_logprobs"
  bool skip_special_tokens = true;
};

// Throws ApiError (400) naming the field. `chat` selects the endpoint's schema.
GenerationRequest parse_generation_request(const std::string& body, bool chat);

}  // namespace ds
