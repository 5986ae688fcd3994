// Fuzz target: arbitrary bytes as a /v1/completions and a /v1/chat/completions body. Any outcome
// but an ApiError with a 4xx status or a request that satisfies the parser's guarantees (a crash, a
// sanitizer report, another exception type) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/openai_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {false, true}) {
    try {
      const ds::GenerationRequest r = ds::parse_generation_request(body, chat);
      if (chat && r.messages.empty()) __builtin_trap();
      if (!chat && !r.prompt_ids && !r.prompt_text) __builtin_trap();
      if (r.prompt_ids && r.prompt_ids->empty()) __builtin_trap();
      if (r.max_tokens && *r.max_tokens < 1) __builtin_trap();
      if (r.top_logprobs > 20) __builtin_trap();
      r.sampling.validate();
    } catch (const ds::ApiError& e) {
      if (e.status < 400 || e.status >= 500) __builtin_trap();
      (void)e.json();
    }
  }
  return 0;
}
