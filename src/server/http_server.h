// OpenAiServer: the HTTP front of `deltaserve serve` (cpp-httplib). HTTP threads parse and validate
// a request, tokenize it, submit it to the ServingEngine and stream its events back (SSE or one JSON
// body); they never touch the engine otherwise. Endpoints: POST /v1/completions,
// POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics (Prometheus text). Bad
// requests get a 4xx with an OpenAI-style error body; a client that disconnects mid-stream has its
// request aborted.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/serving_engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace httplib {
class Server;
}

namespace ds {

struct ServerConfig {
  std::string model_name = "deltaserve";
  int64_t max_model_len = 0;           // prompt + output tokens (> 0)
  int64_t max_request_tokens = 0;      // prompt + output the cache can ever hold for one request (> 0)
  int32_t vocab_size = 0;              // token ids must be below this
  std::vector<int32_t> eos_token_ids;  // default stop tokens (unless ignore_eos)
  int64_t default_max_tokens = 16;     // /v1/completions without max_tokens (OpenAI's default)
  int http_threads = 128;              // concurrent connections served
  std::string no_tokenizer_reason;     // why text prompts are refused, when tok is null
  std::string no_chat_reason;          // why chat is refused, when chat is null
};

class OpenAiServer {
 public:
  // tok / chat may be null (token-id prompts only). All referenced objects outlive the server.
  OpenAiServer(ServerConfig config, ServingEngine& engine, const tok::Tokenizer* tok,
               const tok::ChatTemplate* chat);
  ~OpenAiServer();

  // Binds host:port (port 0 = any free port); returns the bound port. Throws ds::Error on failure.
  int bind(const std::string& host, int port);
  // Serves until stop(); call after bind(). Blocks.
  void run();
  // New generation requests get 503; /health says so. In-flight requests continue.
  void begin_drain() { draining_ = true; }
  // Waits until every generation response has been written to its client (streams to their
  // [DONE]); false on timeout. stop() cuts streams still open, so drain waits here first.
  bool wait_responses_written(double timeout_s);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> draining_{false};
};

}  // namespace ds
