// replay --endpoint's client side against a small in-test OpenAI-style server (cpp-httplib on a
// free loopback port): streamed completions with max_tokens chunks, usage with cached_tokens from
// a PrefixOracle (an unbounded page cache), so the realized hit rate read from usage must equal the
// workload's theoretical rate exactly; failures are counted, not fatal.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/check.h"
#include "replay/endpoint_replay.h"
#include "trace/prefix_oracle.h"
#include "trace/trace.h"

namespace ds {
namespace {

using Json = nlohmann::json;

class FakeServer {
 public:
  explicit FakeServer(int fail_every = 0) : fail_every_(fail_every), oracle_(64) {
    srv_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"fake","object":"model","vocab_size":1000}]})",
                      "application/json");
    });
    srv_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      const Json body = Json::parse(req.body);
      const int n = ++n_requests_;
      if (fail_every_ > 0 && n % fail_every_ == 0) {
        res.status = 400;
        res.set_content(R"({"error":{"message":"nope","type":"invalid_request_error"}})", "application/json");
        return;
      }
      std::vector<int32_t> prompt;
      if (body["prompt"].is_string()) {
        const std::string text = body["prompt"].get<std::string>();
        for (size_t i = 0; i < text.size(); i += 4) prompt.push_back(int32_t(uint8_t(text[i])));
      } else {
        prompt = body["prompt"].get<std::vector<int32_t>>();
      }
      for (int32_t t : prompt) max_id_ = std::max(max_id_.load(), t);
      int64_t cached = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        cached = oracle_.observe(prompt);
      }
      EXPECT_TRUE(body.value("ignore_eos", false));
      EXPECT_TRUE(body.value("stream", false));
      const int64_t max_tokens = body["max_tokens"].get<int64_t>();
      const int64_t n_prompt = int64_t(prompt.size());
      res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
        for (int64_t i = 0; i < max_tokens; ++i) {
          const std::string chunk = "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n";
          sink.write(chunk.data(), chunk.size());
        }
        const std::string usage =
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":" + std::to_string(n_prompt) +
            ",\"completion_tokens\":" + std::to_string(max_tokens) +
            ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(cached) +
            "}}}\n\ndata: [DONE]\n\n";
        sink.write(usage.data(), usage.size());
        sink.done();
        return true;
      });
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    // bind_to_any_port already listens: connections queue until the thread accepts them.
  }
  ~FakeServer() {
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int n_requests() const { return n_requests_; }
  int32_t max_id() const { return max_id_; }

 private:
  int fail_every_;
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  PrefixOracle oracle_;
  std::atomic<int> n_requests_{0};
  std::atomic<int32_t> max_id_{0};
};

Trace small_trace() {
  return load_trace("synthetic:sessions=4,turns=5,input=600,output=6,system=256,think=0,seed=3", {});
}

TEST(EndpointReplay, RealizedHitRateFromUsageEqualsTheOracle) {
  FakeServer server;
  const Trace trace = small_trace();
  ReplayConfig cfg;
  cfg.concurrency = 1;
  cfg.vocab_size = 1000;
  EndpointConfig ep{server.url(), "", false, 30};
  EXPECT_EQ(query_endpoint_model(ep).vocab_size, 1000);
  const RunMetrics m = run_endpoint_replay(trace, cfg, ep);
  EXPECT_EQ(m.n_errors, 0) << m.first_error;
  EXPECT_GT(m.n_requests, 5);
  EXPECT_GT(m.theoretical_hit_rate, 0.3);
  EXPECT_EQ(m.n_hit_tokens, m.n_theoretical_hit_tokens);
  EXPECT_DOUBLE_EQ(m.realized_hit_rate, m.theoretical_hit_rate);
  EXPECT_GT(m.n_output_tokens, 0);
  EXPECT_GT(m.ttft_p50_s, 0);
  EXPECT_LT(server.max_id(), 1000);
  EXPECT_EQ(server.n_requests(), m.n_requests + m.n_warmup_requests);
}

TEST(EndpointReplay, ConcurrentLanesTextPromptsAndFailuresAreCounted) {
  FakeServer server(/*fail_every=*/4);
  const Trace trace = small_trace();
  ReplayConfig cfg;
  cfg.concurrency = 3;
  EndpointConfig ep{server.url(), "fake", true, 30};
  const RunMetrics m = run_endpoint_replay(trace, cfg, ep);
  EXPECT_GT(m.n_errors, 0);
  EXPECT_NE(m.first_error.find("HTTP 400: nope"), std::string::npos) << m.first_error;
  EXPECT_GT(m.n_requests, 0);
  EXPECT_GE(server.n_requests(), m.n_requests + m.n_errors);
}

TEST(EndpointReplay, UnreachableEndpointAndBadUrls) {
  EndpointConfig ep{"http://127.0.0.1:1", "", false, 5};
  EXPECT_THROW(query_endpoint_model(ep), ds::Error);
  ep.url = "https://x";
  EXPECT_THROW(query_endpoint_model(ep), ds::Error);
  ep.url = "http://host:99999";
  EXPECT_THROW(query_endpoint_model(ep), ds::Error);
  ep.url = "http://host:80/v1";
  EXPECT_THROW(query_endpoint_model(ep), ds::Error);
}

TEST(EndpointReplay, BlockTextIsDeterministicAndEndsABlock) {
  EXPECT_EQ(block_text(7, 64), block_text(7, 64));
  EXPECT_NE(block_text(7, 64), block_text(8, 64));
  EXPECT_EQ(block_text(7, 64).substr(block_text(7, 64).size() - 2), ".\n");
}

}  // namespace
}  // namespace ds
