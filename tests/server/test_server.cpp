// The HTTP server on the real Engine with the model-free EchoExecutor (tests/engine): OpenAI
// shapes, streaming, cached_tokens on a shared prefix with exactly the cold outputs, errors as 4xx
// JSON while the server keeps serving, disconnect = abort with memory released (seen in /metrics),
// 64 concurrent streams. Every server binds a free loopback port and is stopped by its fixture.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "../engine/echo_executor.h"
#include "engine/clock.h"
#include "server/http_server.h"
#include "server/serving_engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_files.h"

namespace ds {
namespace {

using Json = nlohmann::json;
constexpr int32_t kVocab = 512;

EngineConfig engine_config() {
  EngineConfig c;
  c.scheduler = {.max_step_tokens = 256, .max_running = 128};
  c.cache.page_tokens = 16;
  c.cache.sizes.kv_bytes_per_token = 1;
  c.cache.sizes.checkpoint_bytes = 32;
  c.cache.sizes.live_state_bytes = 32;
  c.cache.tiers = {CacheTier{.name = "hbm", .capacity_bytes = 1 << 22, .read_bw_bytes_per_s = 1e9}};
  c.cache.retention = "every-block";
  c.cache.eviction = "leaf-lru";
  return c;
}

// POST with a streaming receiver (httplib 0.11's Client::Post has none): receiver returns false
// to hang up. Returns whether the exchange completed.
bool post_stream(httplib::Client& c, const std::string& path, const std::string& body,
                 std::function<bool(const char*, size_t)> receiver) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.set_header("Content-Type", "application/json");
  req.body = body;
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) { return receiver(d, n); };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = c.send(req, res, err);
  if (!ok && err != httplib::Error::Canceled) ADD_FAILURE() << "send failed: " << httplib::to_string(err);
  return ok && res.status == 200;
}

struct Fixture {
  explicit Fixture(bool with_tokenizer = false, const std::string& checkpoint = "kimi-linear-tiny")
      : engine(engine_config(), executor, clock) {
    ServerConfig cfg;
    cfg.model_name = "tiny";
    cfg.max_model_len = 1 << 20;
    cfg.max_request_tokens = 1 << 21;
    cfg.vocab_size = kVocab;
    cfg.eos_token_ids = {};
    cfg.no_tokenizer_reason = "tests/x has no tiktoken.model";
    cfg.no_chat_reason = "no tokenizer";
    if (with_tokenizer) {
      lt = tok::load_tokenizer_dir(DS_TEST_DATA_DIR "/golden/" + checkpoint, kVocab);
      chat.emplace(*tok::ChatTemplate::make(*lt.tokenizer, lt.config, nullptr));
    }
    server = std::make_unique<OpenAiServer>(cfg, engine, lt.tokenizer.get(), chat ? &*chat : nullptr);
    port = server->bind("127.0.0.1", 0);
    thread = std::thread([this] { server->run(); });
  }
  ~Fixture() {
    server->stop();
    thread.join();
    engine.stop();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30, 0);
    return c;
  }
  Json post(const std::string& path, const Json& body, int* status = nullptr) const {
    auto c = client();
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    if (status) *status = r->status;
    return Json::parse(r->body, nullptr, false);
  }
  // Streams a completion; returns the concatenated token ids and the last usage seen.
  std::vector<int32_t> stream(Json body, Json* usage = nullptr, bool* done = nullptr) const {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    body["return_token_ids"] = true;
    std::vector<int32_t> ids;
    std::string buf;
    bool saw_done = false;
    auto c = client();
    const bool r = post_stream(c, "/v1/completions", body.dump(), [&](const char* data, size_t n) {
      buf.append(data, n);
      for (size_t p; (p = buf.find("\n\n")) != std::string::npos; buf.erase(0, p + 2)) {
        const std::string ev = buf.substr(0, p);
        EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
        const std::string payload = ev.substr(6);
        if (payload == "[DONE]") {
          saw_done = true;
          continue;
        }
        const Json j = Json::parse(payload);
        if (!j["choices"].empty() && j["choices"][0].contains("token_ids"))
          for (int32_t t : j["choices"][0]["token_ids"]) ids.push_back(t);
        if (j.contains("usage") && usage) *usage = j["usage"];
      }
      return true;
    });
    EXPECT_TRUE(r);
    if (done) *done = saw_done;
    return ids;
  }
  double metric(const std::string& name_and_labels) const {
    auto c = client();
    auto r = c.Get("/metrics");
    const std::string& t = r->body;
    const size_t p = t.find("\n" + name_and_labels + " ");
    if (p == std::string::npos) return -1;
    return std::stod(t.substr(p + name_and_labels.size() + 2));
  }

  test::EchoExecutor executor{kVocab};
  WallClock clock;
  ServingEngine engine;
  tok::LoadedTokenizer lt;
  std::optional<tok::ChatTemplate> chat;
  std::unique_ptr<OpenAiServer> server;
  int port = 0;
  std::thread thread;
};

std::vector<int32_t> prompt_of(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 7 + salt * 13) % kVocab);
  return p;
}

TEST(Server, ModelsHealthAndCompletions) {
  Fixture f;
  auto c = f.client();
  auto models = Json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["vocab_size"], kVocab);
  EXPECT_EQ(c.Get("/health")->status, 200);
  const auto prompt = prompt_of(40, 1);
  const Json r =
      f.post("/v1/completions",
             {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 7}, {"return_token_ids", true}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["token_ids"].get<std::vector<int32_t>>(), test::echo_cold(prompt, 7, kVocab));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 40);
  EXPECT_EQ(r["usage"]["completion_tokens"], 7);
  EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

TEST(Server, StreamingAndAPrefixHitGiveTheColdTokens) {
  Fixture f;
  const auto first = prompt_of(100, 2);
  Json usage;
  bool done = false;
  auto ids = f.stream({{"prompt", first}, {"max_tokens", 5}}, &usage, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(ids, test::echo_cold(first, 5, kVocab));
  EXPECT_EQ(usage["completion_tokens"], 5);
  // A second prompt sharing the first 96 tokens (6 pages) is served from the cache.
  auto second = first;
  second.resize(96);
  for (int i = 0; i < 30; ++i) second.push_back((i * 3 + 1) % kVocab);
  ids = f.stream({{"prompt", second}, {"max_tokens", 9}}, &usage, &done);
  EXPECT_EQ(ids, test::echo_cold(second, 9, kVocab));
  EXPECT_GT(usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], 96);
  EXPECT_GT(f.metric("deltaserve_cache_hit_tokens_total{model_name=\"tiny\",tier=\"hbm\"}"), 0);
}

TEST(Server, BadRequestsGet4xxAndTheServerKeepsServing) {
  Fixture f;
  auto c = f.client();
  auto expect_error = [&](const std::string& path, const std::string& body, int status,
                          const std::string& part) {
    auto r = c.Post(path, body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body << " -> " << r->body;
    const Json j = Json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(part), std::string::npos) << r->body;
  };
  expect_error("/v1/completions", "{not json", 400, "not valid JSON");
  expect_error("/v1/completions", "[1,2]", 400, "JSON object");
  expect_error("/v1/completions", R"({"prompt": [1, 2], "max_tokens": "7"})", 400, "max_tokens");
  expect_error("/v1/completions", R"({"prompt": [1, -2]})", 400, "prompt");
  expect_error("/v1/completions", R"({"prompt": [1, 99999]})", 400, "out of the vocabulary");
  expect_error("/v1/completions", R"({"prompt": "hello"})", 400, "has no tiktoken.model");
  expect_error("/v1/completions", R"({"prompt": [1], "model": "gpt-x"})", 404, "gpt-x");
  expect_error("/v1/completions", R"({"prompt": [1], "n": 2})", 400, "n = 1");
  expect_error("/v1/completions", R"({"prompt": [1], "temperature": -1})", 400, "temperature");
  expect_error("/v1/completions", R"({"prompt": [1, 2], "max_tokens": 1048576})", 400,
               "maximum context length");
  expect_error("/v1/chat/completions", R"({"messages": []})", 400, "messages");
  expect_error("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})", 400,
               "tiktoken.model");
  expect_error("/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "hi"}]})", 400,
               "wizard");
  expect_error("/v1/nothing", "{}", 404, "no route");
  const Json ok = f.post("/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 2}});
  EXPECT_EQ(ok["usage"]["completion_tokens"], 2);
}

// After a client hung up on a request of `max_tokens`: it was aborted, nothing runs, no live
// state is held, it stopped early, and the server still answers.
void expect_one_abort_released(const Fixture& f, int64_t max_tokens) {
  const std::string L = "{model_name=\"tiny\"}";
  for (int i = 0; i < 500 && f.metric("deltaserve_requests_running" + L) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(f.metric("deltaserve_requests_running" + L), 0);
  EXPECT_EQ(f.metric("deltaserve_requests_total{model_name=\"tiny\",outcome=\"aborted\"}"), 1);
  EXPECT_EQ(f.metric("deltaserve_cache_bytes{model_name=\"tiny\",kind=\"live_state\",tier=\"hbm\"}"), 0);
  EXPECT_LT(f.metric("deltaserve_generation_tokens_total" + L), max_tokens);
  const Json ok = f.post("/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 2}});
  EXPECT_EQ(ok["usage"]["completion_tokens"], 2);
}

TEST(Server, DisconnectMidStreamAbortsAndReleasesMemory) {
  Fixture f;
  {
    auto c = f.client();
    int chunks = 0;
    Json body = {{"prompt", prompt_of(64, 3)}, {"max_tokens", 500000}, {"stream", true}};
    const bool r = post_stream(c, "/v1/completions", body.dump(),
                               [&](const char*, size_t) { return ++chunks < 5; });  // hang up after 5 chunks
    EXPECT_FALSE(r);
  }
  expect_one_abort_released(f, 500000);
}

TEST(Server, DisconnectWhileWaitingForANonStreamedResultAborts) {
  Fixture f;
  {
    httplib::Client c("127.0.0.1", f.port);
    c.set_read_timeout(0, 300000);  // hang up after 0.3 s without an answer
    const Json body = {{"prompt", prompt_of(64, 4)}, {"max_tokens", 200000}};
    EXPECT_FALSE(c.Post("/v1/completions", body.dump(), "application/json"));
  }
  expect_one_abort_released(f, 200000);
}

TEST(Server, SixtyFourConcurrentStreams) {
  Fixture f;
  std::atomic<int> n_ok{0};
  std::vector<std::thread> threads;
  const int n_streams = 64;
  for (int i = 0; i < n_streams; ++i)
    threads.emplace_back([&, i] {
      const auto prompt = prompt_of(30 + i, i);
      bool done = false;
      const auto ids = f.stream({{"prompt", prompt}, {"max_tokens", 20}}, nullptr, &done);
      if (done && ids == test::echo_cold(prompt, 20, kVocab)) ++n_ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(n_ok, 64);
  EXPECT_EQ(f.metric("deltaserve_requests_total{model_name=\"tiny\",outcome=\"finished\"}"), 64);
}

TEST(Server, ChatWithTheTinyTokenizerAndStopStrings) {
  Fixture f(/*with_tokenizer=*/true);
  const Json r = f.post("/v1/chat/completions",
                        {{"messages", {{{"role", "user"}, {"content", "Hello!"}}}}, {"max_tokens", 6}});
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  const auto rendered = f.chat->render({{"user", "Hello!"}}, "", true);
  EXPECT_EQ(r["usage"]["prompt_tokens"], int64_t(rendered.size()));
  // Text prompt; then the same with its own output's first character as a stop string.
  const Json a = f.post("/v1/completions", {{"prompt", "The cache"}, {"max_tokens", 12}});
  const std::string text = a["choices"][0]["text"];
  ASSERT_FALSE(text.empty());
  const Json b =
      f.post("/v1/completions", {{"prompt", "The cache"}, {"max_tokens", 12}, {"stop", text.substr(0, 1)}});
  EXPECT_EQ(b["choices"][0]["text"], "");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
}

TEST(Server, ChatInK3sXtmlFormatStopsAtTheChannelEnd) {
  Fixture f(/*with_tokenizer=*/true, "k3-tiny");
  ASSERT_EQ(f.chat->format(), tok::ChatFormat::kXtml);
  const auto& stops = f.chat->stop_ids();  // <|end_of_msg|>, <|close|>
  // A user message whose greedy echo output meets a chat stop token within 64 tokens.
  constexpr int kMax = 64;
  for (int k = 0; k < 200; ++k) {
    const std::string content = "Hello " + std::to_string(k);
    const auto rendered = f.chat->render({{"user", content}}, "", true);
    const auto cold = test::echo_cold(rendered, kMax, kVocab);
    const auto stop = std::find_if(cold.begin(), cold.end(), [&](int32_t t) {
      return std::find(stops.begin(), stops.end(), t) != stops.end();
    });
    if (stop == cold.end()) continue;
    const Json r = f.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", content}}}},
                                                   {"max_tokens", kMax},
                                                   {"return_token_ids", true}});
    EXPECT_EQ(r["usage"]["prompt_tokens"], int64_t(rendered.size()));
    EXPECT_EQ(r["prompt_token_ids"], Json(rendered));
    EXPECT_EQ(r["choices"][0]["token_ids"], Json(std::vector<int32_t>(cold.begin(), stop + 1)));
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
    return;
  }
  FAIL() << "no message found whose echo output reaches a chat stop token";
}

}  // namespace
}  // namespace ds
