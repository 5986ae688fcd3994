#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "server/client_connection.h"
#include "server/openai_api.h"
#include "server/output_text.h"
#include "tokenizer/utf8.h"

namespace ds {

namespace {

using Json = nlohmann::json;

int64_t unix_now() {
  return int64_t(std::time(nullptr));
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.json(), "application/json");
}

Json usage_json(const StreamEvent& done, int64_t n_output) {
  return {{"prompt_tokens", done.n_prompt_tokens},
          {"completion_tokens", n_output},
          {"total_tokens", done.n_prompt_tokens + n_output},
          {"prompt_tokens_details", {{"cached_tokens", done.n_cached_tokens}}}};
}

// Counts responses not yet written; drain waits for it to reach zero.
class OpenResponses {
 public:
  // Held by a Generation: released when its response has been written (a stream's content
  // provider is destroyed with the Response, after the last chunk).
  std::shared_ptr<void> open() {
    std::lock_guard<std::mutex> lock(mu_);
    ++n_;
    return {this, [](void* p) { static_cast<OpenResponses*>(p)->close(); }};
  }
  bool wait_zero(double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return n_ == 0; });
  }

 private:
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

// One request in flight: what the HTTP thread keeps between stream events.
struct Generation {
  std::shared_ptr<void> open;  // OpenResponses::open()
  GenerationRequest req;
  std::vector<int32_t> prompt;
  RequestId id = 0;
  std::shared_ptr<RequestStream> stream;
  std::unique_ptr<OutputText> text;
  std::string object_id;
  int64_t created = 0;
  int64_t n_output = 0;  // tokens counted in the response (through a matched stop string)
  Json logprobs;         // non-stream: accumulated OpenAI logprobs object (null = not asked)
  int64_t text_offset = 0;
  bool cancelled_for_stop = false;
  bool sent_role = false;  // chat stream: first delta carries the role
  bool finished = false;
};

}  // namespace

struct OpenAiServer::Impl {
  ServerConfig cfg;
  ServingEngine& engine;
  const tok::Tokenizer* tok;
  const tok::ChatTemplate* chat;
  std::atomic<bool>* draining;
  httplib::Server http;
  OpenResponses open_responses;
  int listen_fd = -1;  // captured by the socket-options hook, to raise the listen backlog

  Impl(ServerConfig c, ServingEngine& e, const tok::Tokenizer* t, const tok::ChatTemplate* ch,
       std::atomic<bool>* d)
      : cfg(std::move(c)), engine(e), tok(t), chat(ch), draining(d) {}

  void routes();
  void handle_generation(const httplib::Request& hreq, httplib::Response& res, bool is_chat);
  std::vector<int32_t> build_prompt(const GenerationRequest& r) const;
  Request make_request(const GenerationRequest& r, std::vector<int32_t> prompt) const;
  // Feeds one event into the generation; returns the text chunk, new token ids and, when asked,
  // the logprobs of those tokens (OpenAI's completions or chat shape).
  void consume(Generation& g, const StreamEvent& e, std::string& text, std::vector<int32_t>& ids, Json* lp);
  Json logprobs_json(Generation& g, const std::vector<int32_t>& ids,
                     const std::vector<TokenLogprobs>& lps) const;
  std::string token_text(int32_t id) const;
  Json chunk(const Generation& g, const std::string& text, const std::vector<int32_t>& ids,
             const char* finish_reason) const;
  Json final_body(const Generation& g, const std::string& text, const std::vector<int32_t>& ids,
                  const StreamEvent& done) const;
};

std::vector<int32_t> OpenAiServer::Impl::build_prompt(const GenerationRequest& r) const {
  if (r.prompt_ids) {
    for (int32_t t : *r.prompt_ids)
      if (t >= cfg.vocab_size)
        throw ApiError(400,
                       fmt::format("token id {} is out of the vocabulary (0..{})", t, cfg.vocab_size - 1),
                       "prompt");
    return *r.prompt_ids;
  }
  if (!tok)
    throw ApiError(400, "text prompts are not available: " + cfg.no_tokenizer_reason,
                   r.chat ? "messages" : "prompt");
  if (r.chat) {
    if (!chat) throw ApiError(400, "chat is not available: " + cfg.no_chat_reason, "messages");
    try {
      return chat->render(r.messages, r.tools_json, true);
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "messages");
    }
  }
  return tok->encode(*r.prompt_text, tok::SpecialMode::kAllow);
}

Request OpenAiServer::Impl::make_request(const GenerationRequest& r, std::vector<int32_t> prompt) const {
  const int64_t n_prompt = int64_t(prompt.size());
  if (n_prompt == 0) throw ApiError(400, "the prompt is empty", r.chat ? "messages" : "prompt");
  if (n_prompt >= cfg.max_model_len)
    throw ApiError(
        400,
        fmt::format("This model's maximum context length is {} tokens. However, your prompt has {} "
                    "tokens, leaving no room for output.",
                    cfg.max_model_len, n_prompt),
        r.chat ? "messages" : "prompt");
  const int64_t max_tokens =
      r.max_tokens.value_or(r.chat ? cfg.max_model_len - n_prompt : cfg.default_max_tokens);
  if (n_prompt + max_tokens > cfg.max_model_len)
    throw ApiError(
        400,
        fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                    "({} in the prompt, {} in the completion).",
                    cfg.max_model_len, n_prompt + max_tokens, n_prompt, max_tokens),
        "max_tokens");
  if (n_prompt + max_tokens > cfg.max_request_tokens)
    throw ApiError(
        400,
        fmt::format("{} prompt + {} completion tokens can never fit in this server's cache budget of {} "
                    "tokens per request",
                    n_prompt, max_tokens, cfg.max_request_tokens),
        "max_tokens");
  Request q;
  q.tokens = std::move(prompt);
  q.n_prompt_tokens = n_prompt;
  q.max_output_tokens = max_tokens;
  q.sampling = r.sampling;
  q.sampling.logprobs = r.top_logprobs;
  if (!r.ignore_eos) {
    q.sampling.stop_token_ids = cfg.eos_token_ids;
    if (r.chat && chat)
      q.sampling.stop_token_ids.insert(q.sampling.stop_token_ids.end(), chat->stop_ids().begin(),
                                       chat->stop_ids().end());
  }
  for (int32_t t : r.stop_token_ids) {
    if (t >= cfg.vocab_size)
      throw ApiError(400, fmt::format("stop token id {} is out of the vocabulary", t), "stop_token_ids");
    q.sampling.stop_token_ids.push_back(t);
  }
  try {
    q.sampling.validate();
  } catch (const Error& e) {
    throw ApiError(400, e.what());
  }
  return q;
}

std::string OpenAiServer::Impl::token_text(int32_t id) const {
  if (!tok || !tok->valid_id(id)) return fmt::format("<{}>", id);
  return tok::utf8_repair(tok->token_bytes(id));
}

Json OpenAiServer::Impl::logprobs_json(Generation& g, const std::vector<int32_t>& ids,
                                       const std::vector<TokenLogprobs>& lps) const {
  auto bytes_of = [&](int32_t id) {
    Json b = Json::array();
    if (tok && tok->valid_id(id))
      for (unsigned char c : tok->token_bytes(id)) b.push_back(int(c));
    return b;
  };
  if (g.req.chat) {
    Json content = Json::array();
    for (size_t i = 0; i < ids.size() && i < lps.size(); ++i) {
      Json top = Json::array();
      for (const auto& [id, lp] : lps[i].top)
        top.push_back({{"token", token_text(id)}, {"logprob", lp}, {"bytes", bytes_of(id)}});
      content.push_back({{"token", token_text(ids[i])},
                         {"logprob", lps[i].logprob},
                         {"bytes", bytes_of(ids[i])},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  Json out = {{"tokens", Json::array()},
              {"token_logprobs", Json::array()},
              {"top_logprobs", Json::array()},
              {"text_offset", Json::array()}};
  for (size_t i = 0; i < ids.size() && i < lps.size(); ++i) {
    const std::string t = token_text(ids[i]);
    out["tokens"].push_back(t);
    out["token_logprobs"].push_back(lps[i].logprob);
    Json top = Json::object();
    for (const auto& [id, lp] : lps[i].top) top[token_text(id)] = lp;
    out["top_logprobs"].push_back(top);
    out["text_offset"].push_back(g.text_offset);
    g.text_offset += int64_t(t.size());
  }
  return out;
}

void OpenAiServer::Impl::consume(Generation& g, const StreamEvent& e, std::string& text,
                                 std::vector<int32_t>& ids, Json* lp) {
  const size_t first = ids.size();
  for (int32_t t : e.tokens) {
    if (g.text->stopped()) break;
    const bool is_stop_token =
        std::find(g.req.stop_token_ids.begin(), g.req.stop_token_ids.end(), t) !=
            g.req.stop_token_ids.end() ||
        (!g.req.ignore_eos &&
         (std::find(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end(), t) != cfg.eos_token_ids.end() ||
          (g.req.chat && chat &&
           std::find(chat->stop_ids().begin(), chat->stop_ids().end(), t) != chat->stop_ids().end())));
    ids.push_back(t);
    ++g.n_output;
    // A stop token ends the output; its text is not returned (vLLM's default).
    if (!is_stop_token) text += g.text->push(t);
    if (g.text->stopped() && !g.cancelled_for_stop) {
      g.cancelled_for_stop = true;
      engine.cancel(g.id);
    }
  }
  if (e.done && !g.text->stopped()) text += g.text->finish();
  if (lp && g.req.top_logprobs >= 0 && !e.logprobs.empty()) {
    const std::vector<int32_t> mine(ids.begin() + long(first), ids.end());
    *lp = logprobs_json(g, mine, e.logprobs);
  }
}

Json OpenAiServer::Impl::chunk(const Generation& g, const std::string& text, const std::vector<int32_t>& ids,
                               const char* finish_reason) const {
  Json choice = {
      {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason ? Json(finish_reason) : Json()}};
  if (g.req.chat) {
    Json delta = Json::object();
    if (!g.sent_role) delta["role"] = "assistant";
    if (!text.empty() || !g.sent_role) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  if (g.req.return_token_ids || !tok) choice["token_ids"] = ids;
  return {{"id", g.object_id},
          {"object", g.req.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", g.created},
          {"model", cfg.model_name},
          {"choices", Json::array({choice})}};
}

Json OpenAiServer::Impl::final_body(const Generation& g, const std::string& text,
                                    const std::vector<int32_t>& ids, const StreamEvent& done) const {
  const std::string reason = g.text->stopped() ? "stop" : done.finish_reason;
  Json choice = {{"index", 0}, {"logprobs", g.logprobs}, {"finish_reason", reason}};
  if (g.req.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  if (g.req.return_token_ids || !tok) choice["token_ids"] = ids;
  Json body = {{"id", g.object_id},
               {"object", g.req.chat ? "chat.completion" : "text_completion"},
               {"created", g.created},
               {"model", cfg.model_name},
               {"choices", Json::array({choice})},
               {"usage", usage_json(done, g.n_output)}};
  if (g.req.return_token_ids) body["prompt_token_ids"] = g.prompt;
  return body;
}

void OpenAiServer::Impl::handle_generation(const httplib::Request& hreq, httplib::Response& res,
                                           bool is_chat) {
  if (*draining) {
    send_error(res, ApiError(503, "the server is shutting down", "", "service_unavailable"));
    return;
  }
  auto g = std::make_shared<Generation>();
  g->open = open_responses.open();
  try {
    g->req = parse_generation_request(hreq.body, is_chat);
    if (!g->req.model.empty() && g->req.model != cfg.model_name)
      throw ApiError(404,
                     fmt::format("The model '{}' does not exist (this server serves '{}')", g->req.model,
                                 cfg.model_name),
                     "model", "not_found_error");
    g->prompt = build_prompt(g->req);
    Request q = make_request(g->req, g->prompt);
    g->text = std::make_unique<OutputText>(tok, g->req.stop, g->req.skip_special_tokens);
    g->created = unix_now();
    g->stream = engine.submit(std::move(q), &g->id);
    g->object_id = fmt::format("{}-{}", is_chat ? "chatcmpl" : "cmpl", g->id);
  } catch (const ApiError& e) {
    send_error(res, e);
    return;
  }

  if (!g->req.stream) {
    // Polled while waiting: a client that hangs up has its request aborted and memory released.
    const auto conn = ClientConnection::find(hreq.remote_addr, hreq.remote_port, hreq.local_port);
    std::string text;
    std::vector<int32_t> ids;
    auto last_check = std::chrono::steady_clock::now();
    for (;;) {
      auto e = g->stream->next(conn ? 0.05 : 3600);
      if (conn && std::chrono::steady_clock::now() - last_check > std::chrono::milliseconds(50)) {
        last_check = std::chrono::steady_clock::now();
        if (conn->closed()) {
          engine.cancel(g->id);
          return;
        }
      }
      if (!e) continue;
      Json lp;
      consume(*g, *e, text, ids, &lp);
      if (!lp.is_null()) {
        if (g->logprobs.is_null()) {
          g->logprobs = lp;
        } else {
          for (auto& [k, v] : lp.items())
            for (auto& x : v) g->logprobs[k].push_back(x);
        }
      }
      if (!e->done) continue;
      if (e->finish_reason == "error") {
        send_error(res, ApiError(400, e->error));
        return;
      }
      res.set_content(final_body(*g, text, ids, *e).dump(), "application/json");
      return;
    }
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, g](size_t, httplib::DataSink& sink) {
        auto write = [&](const Json& j) {
          const std::string s = "data: " + j.dump() + "\n\n";
          return sink.write(s.data(), s.size());
        };
        auto e = g->stream->next(0.05);
        if (!e) return sink.is_writable ? sink.is_writable() : true;  // false: client gone -> abort
        std::string text;
        std::vector<int32_t> ids;
        Json lp;
        consume(*g, *e, text, ids, &lp);
        auto with_lp = [&](Json c) {
          if (!lp.is_null()) c["choices"][0]["logprobs"] = lp;
          return c;
        };
        if (!e->done) {
          if (text.empty() && ids.empty()) return true;
          const bool ok = write(with_lp(chunk(*g, text, ids, nullptr)));
          g->sent_role = true;
          return ok;
        }
        g->finished = true;
        if (e->finish_reason == "error") {
          write(Json::parse(ApiError(400, e->error).json()));
        } else {
          const std::string reason = g->text->stopped() ? "stop" : e->finish_reason;
          if (!text.empty() || !ids.empty()) {
            write(with_lp(chunk(*g, text, ids, nullptr)));
            g->sent_role = true;
          }
          write(chunk(*g, "", {}, reason.c_str()));
          if (g->req.include_usage) {
            Json u = chunk(*g, "", {}, nullptr);
            u["choices"] = Json::array();
            u["usage"] = usage_json(*e, g->n_output);
            write(u);
          }
        }
        const std::string end = "data: [DONE]\n\n";
        sink.write(end.data(), end.size());
        sink.done();
        return true;
      },
      [this, g](bool success) {
        if (!g->finished) engine.cancel(g->id);  // client went away mid-stream: release its memory
        (void)success;
      });
}

void OpenAiServer::Impl::routes() {
  // Debian's libcpp-httplib listens with a backlog of 5, which drops connections when dozens of
  // clients connect at once; remember the socket and listen again with a real backlog after bind.
  http.set_socket_options([this](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = fd;
  });
  http.set_payload_max_length(size_t(256) << 20);
  const int n_threads = std::max(cfg.http_threads, 4);
  http.new_task_queue = [n_threads] { return new httplib::ThreadPool(size_t(n_threads)); };
  http.set_read_timeout(600, 0);
  http.set_write_timeout(600, 0);
  http.Post("/v1/completions",
            [this](const httplib::Request& q, httplib::Response& r) { handle_generation(q, r, false); });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& q, httplib::Response& r) { handle_generation(q, r, true); });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) {
    Json card = {{"id", cfg.model_name},
                 {"object", "model"},
                 {"created", unix_now()},
                 {"owned_by", "deltaserve"},
                 {"max_model_len", cfg.max_model_len},
                 {"vocab_size", cfg.vocab_size}};
    r.set_content(Json{{"object", "list"}, {"data", Json::array({card})}}.dump(), "application/json");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& r) {
    r.status = *draining ? 503 : 200;
    r.set_content(*draining ? "draining\n" : "ok\n", "text/plain");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    r.set_content(prometheus_text(engine.metrics(), cfg.model_name), "text/plain; version=0.0.4");
  });
  http.set_error_handler([](const httplib::Request& q, httplib::Response& r) {
    if (!r.body.empty()) return;
    const char* type = r.status == 404 ? "not_found_error" : "invalid_request_error";
    const std::string msg = r.status == 404   ? fmt::format("no route {} {}", q.method, q.path)
                            : r.status == 413 ? std::string("request body too large")
                                              : fmt::format("HTTP {}", r.status);
    r.set_content(ApiError(r.status, msg, "", type).json(), "application/json");
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& r, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    r.status = 500;
    r.set_content(ApiError(500, msg, "", "server_error").json(), "application/json");
  });
}

OpenAiServer::OpenAiServer(ServerConfig config, ServingEngine& engine, const tok::Tokenizer* tok,
                           const tok::ChatTemplate* chat)
    : impl_(std::make_unique<Impl>(std::move(config), engine, tok, chat, &draining_)) {
  DS_CHECK(impl_->cfg.max_model_len > 0 && impl_->cfg.max_request_tokens > 0 && impl_->cfg.vocab_size > 0,
           "server config needs max_model_len, max_request_tokens and vocab_size > 0");
  impl_->routes();
}

OpenAiServer::~OpenAiServer() {
  stop();
}

int OpenAiServer::bind(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = impl_->http.bind_to_any_port(host);
    DS_CHECK(bound > 0, "cannot bind an HTTP port on {}", host);
  } else {
    DS_CHECK(impl_->http.bind_to_port(host, port),
             "cannot bind {}:{} (in use, or not an address of this host)", host, port);
  }
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, 1024);
  return bound;
}

void OpenAiServer::run() {
  impl_->http.listen_after_bind();
}

bool OpenAiServer::wait_responses_written(double timeout_s) {
  return impl_->open_responses.wait_zero(timeout_s);
}

void OpenAiServer::stop() {
  if (impl_) impl_->http.stop();
}

}  // namespace ds
