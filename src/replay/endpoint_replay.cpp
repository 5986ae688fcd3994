#include "replay/endpoint_replay.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/check.h"
#include "core/hash.h"
#include "replay/replay_workload.h"

namespace ds {
namespace {

using Json = nlohmann::json;

struct Url {
  std::string host;
  int port = 80;
};

Url parse_url(const std::string& url) {
  const std::string prefix = "http://";
  DS_CHECK(url.rfind(prefix, 0) == 0, "endpoint '{}' must start with http://", url);
  std::string rest = url.substr(prefix.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  DS_CHECK(rest.find('/') == std::string::npos, "endpoint '{}' must be http://host:port without a path", url);
  Url u;
  const size_t colon = rest.rfind(':');
  const size_t bracket = rest.find(']');  // [::1]:8000
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    u.host = rest;
  } else {
    u.host = rest.substr(0, colon);
    try {
      size_t used = 0;
      u.port = std::stoi(rest.substr(colon + 1), &used);
      DS_CHECK(used == rest.size() - colon - 1, "bad port");
    } catch (const std::exception&) {
      fail("endpoint '{}': bad port", url);
    }
  }
  DS_CHECK(!u.host.empty() && u.port > 0 && u.port < 65536, "endpoint '{}': bad host or port", url);
  if (u.host.size() > 2 && u.host.front() == '[') u.host = u.host.substr(1, u.host.size() - 2);
  return u;
}

std::unique_ptr<httplib::Client> make_client(const Url& u, double timeout_s) {
  auto c = std::make_unique<httplib::Client>(u.host, u.port);
  c->set_connection_timeout(std::chrono::seconds(10));
  c->set_read_timeout(std::chrono::milliseconds(int64_t(timeout_s * 1000)));
  c->set_write_timeout(std::chrono::seconds(60));
  c->set_keep_alive(true);
  return c;
}

// Incremental SSE reader: feed bytes, get complete `data:` payloads.
class SseReader {
 public:
  template <typename Fn>
  void feed(const char* data, size_t n, Fn&& on_data) {
    buf_.append(data, n);
    size_t start = 0;
    for (;;) {
      const size_t eol = buf_.find('\n', start);
      if (eol == std::string::npos) break;
      std::string_view line(buf_.data() + start, eol - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.rfind("data:", 0) == 0) {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        on_data(line);
      }
      start = eol + 1;
    }
    buf_.erase(0, start);
  }

 private:
  std::string buf_;
};

struct Outcome {
  bool ok = false;
  std::string error;
  double first_token_s = -1, last_token_s = -1, end_s = 0;
  int64_t n_output = 0, n_prompt = -1, n_cached = 0, n_chunks = 0;
};

using SteadyClock = std::chrono::steady_clock;

// One streamed completion. Times are seconds since `t0`.
Outcome send_completion(httplib::Client& client, const Json& body, SteadyClock::time_point t0) {
  auto now_s = [&] { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); };
  Outcome out;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.body = body.dump();
  int status = 0;
  std::string error_body;
  SseReader sse;
  bool done = false;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      if (error_body.size() < 4096) error_body.append(data, n);
      return true;
    }
    sse.feed(data, n, [&](std::string_view payload) {
      if (payload == "[DONE]") {
        done = true;
        return;
      }
      Json j = Json::parse(payload, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return;
      if (j.contains("error")) {
        out.error = j["error"].value("message", std::string("error event"));
        return;
      }
      if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
        const Json& c = j["choices"][0];
        const bool has_text =
            c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty();
        const bool has_ids = c.contains("token_ids") && c["token_ids"].is_array() && !c["token_ids"].empty();
        if (has_text || has_ids) {
          const double t = now_s();
          if (out.first_token_s < 0) out.first_token_s = t;
          out.last_token_s = t;
          ++out.n_chunks;
        }
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        const Json& u = j["usage"];
        out.n_prompt = u.value("prompt_tokens", int64_t(-1));
        out.n_output = u.value("completion_tokens", int64_t(0));
        if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object())
          out.n_cached = u["prompt_tokens_details"].value("cached_tokens", int64_t(0));
      }
    });
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = client.send(req, res, err);
  out.end_s = now_s();
  if (!sent) {
    out.error = "HTTP " + httplib::to_string(err);
  } else if (status != 200) {
    Json e = Json::parse(error_body, nullptr, false);
    std::string msg = error_body.substr(0, 200);
    if (!e.is_discarded() && e.contains("error") && e["error"].is_object())
      msg = e["error"].value("message", msg);
    out.error = "HTTP " + std::to_string(status) + ": " + msg;
  } else if (out.error.empty() && !done) {
    out.error = "stream ended without [DONE]";
  } else if (out.error.empty()) {
    if (out.n_output == 0) out.n_output = out.n_chunks;
    out.ok = out.first_token_s >= 0;
    if (!out.ok) out.error = "no token streamed";
  }
  return out;
}

const char* const kWords[] = {"alpha",  "bravo",   "charlie", "delta",  "echo",   "foxtrot", "golf",
                              "hotel",  "india",   "juliet",  "kilo",   "lima",   "mike",    "novem",
                              "oscar",  "papa",    "quebec",  "romeo",  "sierra", "tango",   "uniform",
                              "victor", "whiskey", "xray",    "yankee", "zulu",   "cache",   "state",
                              "page",   "token",   "model",   "layer"};

}  // namespace

std::string block_text(uint64_t block_id, int block_tokens) {
  std::string s;
  uint64_t x = splitmix64(block_id ^ 0x5bd1e995u);
  for (int i = 0; i + 1 < block_tokens; ++i) {
    x = splitmix64(x);
    s += ' ';
    s += kWords[x % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  s += ".\n";
  return s;
}

EndpointModel query_endpoint_model(const EndpointConfig& endpoint) {
  const Url u = parse_url(endpoint.url);
  auto client = make_client(u, 30);
  auto res = client->Get("/v1/models");
  DS_CHECK(res, "endpoint {}: GET /v1/models failed ({})", endpoint.url, httplib::to_string(res.error()));
  DS_CHECK(res->status == 200, "endpoint {}: GET /v1/models answered HTTP {}", endpoint.url, res->status);
  Json j = Json::parse(res->body, nullptr, false);
  DS_CHECK(!j.is_discarded() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
               j["data"][0].contains("id") && j["data"][0]["id"].is_string(),
           "endpoint {}: GET /v1/models returned no model", endpoint.url);
  EndpointModel m;
  m.id = j["data"][0]["id"].get<std::string>();
  const Json& card = j["data"][0];
  if (card.contains("vocab_size") && card["vocab_size"].is_number_integer())
    m.vocab_size = card["vocab_size"].get<int64_t>();
  if (card.contains("max_model_len") && card["max_model_len"].is_number_integer())
    m.max_model_len = card["max_model_len"].get<int64_t>();
  return m;
}

RunMetrics run_endpoint_replay(const Trace& trace, const ReplayConfig& cfg, const EndpointConfig& endpoint) {
  const Url url = parse_url(endpoint.url);
  std::string model = endpoint.model;
  if (model.empty()) model = query_endpoint_model(endpoint).id;
  ReplayWorkload workload(trace, cfg);
  const SteadyClock::time_point t0 = SteadyClock::now();
  auto now_s = [&] { return std::chrono::duration<double>(SteadyClock::now() - t0).count(); };

  struct Done {
    ReplaySend send;
    double send_s;
    Outcome outcome;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Done> done;
  std::vector<std::thread> threads;
  int64_t n_in_flight = 0;

  auto launch = [&](ReplaySend r) {
    Json body = {{"model", model},
                 {"max_tokens", r.max_output_tokens},
                 {"min_tokens", r.max_output_tokens},
                 {"ignore_eos", true},
                 {"temperature", 0},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    if (endpoint.text_prompts) {
      std::string text;
      for (const uint64_t h : r.turn->hash_ids)
        text += block_text(h ^ splitmix64(r.salt), trace.block_tokens);
      body["prompt"] = text;
    } else {
      body["prompt"] = r.tokens;
    }
    const double send_s = now_s();
    ++n_in_flight;
    threads.emplace_back([&, r = std::move(r), body = std::move(body), send_s]() mutable {
      auto client = make_client(url, endpoint.request_timeout_s);
      Outcome o = send_completion(*client, body, t0);
      std::lock_guard<std::mutex> lock(mu);
      done.push_back({std::move(r), send_s, std::move(o)});
      cv.notify_one();
    });
  };

  std::vector<RequestSample> samples;
  int64_t n_warmup = 0, n_warmup_open = 0, n_errors = 0, n_output_total = 0, n_output_at_measure = 0;
  double measure_start_s = 0;
  std::string first_error;
  const double stop_s = cfg.duration_s > 0 ? cfg.duration_s : 1e300;

  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    const double now = now_s();
    if (now < stop_s) {
      while (auto r = workload.take_due(now)) {
        if (r->warmup) ++n_warmup, ++n_warmup_open;
        if (r->tokens.empty()) {
          workload.done(*r, now);
          continue;
        }
        launch(std::move(*r));
      }
    }
    while (!done.empty()) {
      Done d = std::move(done.front());
      done.pop_front();
      --n_in_flight;
      const Outcome& o = d.outcome;
      const double t = o.end_s;
      if (!o.ok) {
        ++n_errors;
        if (first_error.empty()) first_error = o.error;
      } else {
        n_output_total += o.n_output;
      }
      if (d.send.warmup) {
        if (--n_warmup_open == 0) measure_start_s = t, n_output_at_measure = n_output_total;
      } else if (o.ok) {
        RequestSample s;
        s.n_prompt = o.n_prompt >= 0 ? o.n_prompt : int64_t(d.send.tokens.size());
        s.n_hit = s.n_kv = o.n_cached;
        // Theoretical hit in the server's token units (text mode tokenizes differently).
        s.n_oracle = d.send.tokens.empty() ? 0
                                           : int64_t(double(d.send.oracle_hit_tokens) * double(s.n_prompt) /
                                                     double(d.send.tokens.size()));
        s.n_output = o.n_output;
        s.ttft_s = o.first_token_s - d.send_s;
        s.tpot_s = o.n_output > 1 ? (o.last_token_s - o.first_token_s) / double(o.n_output - 1) : -1;
        samples.push_back(s);
      }
      workload.done(d.send, t);
    }
    if (n_in_flight == 0 && (!workload.has_arrivals() || now_s() >= stop_s)) break;
    if (n_in_flight == 0 || workload.has_arrivals()) {
      const double wait_until =
          workload.has_arrivals() ? std::min(workload.next_arrival_s(), stop_s) : stop_s;
      const double wait_s = std::max(0.0, std::min(wait_until - now_s(), 1.0));
      if (done.empty()) cv.wait_for(lock, std::chrono::duration<double>(wait_s));
    } else {
      cv.wait(lock, [&] { return !done.empty(); });
    }
  }
  lock.unlock();
  for (auto& th : threads) th.join();

  RunMetrics m;
  m.label = cfg.label;
  m.concurrency = trace.closed_loop ? cfg.concurrency : 0;
  m.retention = "server";
  m.eviction = "server";
  m.tiers = "server";
  m.gpus = cfg.gpus;
  summarize_samples(samples, {"server"}, m);
  m.elapsed_virtual_s = now_s();
  const double start = n_warmup_open == 0 ? measure_start_s : 0;
  const int64_t out0 = n_warmup_open == 0 ? n_output_at_measure : 0;
  set_throughput(m, m.elapsed_virtual_s - start, n_output_total - out0, cfg.gpus);
  m.n_warmup_requests = n_warmup;
  m.n_errors = n_errors;
  m.first_error = first_error;
  return m;
}

}  // namespace ds
