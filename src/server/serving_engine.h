// ServingEngine: the server's one engine thread. It owns nothing of the engine's logic: it runs the
// Engine's step loop on its own thread, takes requests and cancellations from HTTP threads through
// a locked inbox, and hands each request's events (sampled tokens, finish, abort, rejection) to
// that request's RequestStream, which the HTTP thread waits on. Also keeps the serving metrics
// (latency histograms, counters) that /metrics prints.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "server/serving_metrics.h"

namespace ds {

// What an HTTP thread reads from its request, in order.
struct StreamEvent {
  std::vector<int32_t> tokens;          // newly sampled, in order
  std::vector<TokenLogprobs> logprobs;  // one per token when the request asked for logprobs
  bool done = false;                    // last event of the request
  std::string finish_reason;            // done: "stop" (a stop token), "length", "abort", or "error"
  std::string error;                    // finish_reason == "error": why (e.g. rejected: never fits)
  int64_t n_prompt_tokens = 0;          // done: prompt length
  int64_t n_cached_tokens = 0;          // done: prefix restored from the cache at (last) admission
  int64_t n_output_tokens = 0;          // done
};

class RequestStream {
 public:
  // Blocks until an event or `timeout_s`; nullopt on timeout.
  std::optional<StreamEvent> next(double timeout_s);
  void push(StreamEvent e);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
};

class ServingEngine {
 public:
  // `executor` and `clock` outlive this object. Starts the engine thread.
  ServingEngine(const EngineConfig& config, Executor& executor, Clock& clock);
  ~ServingEngine();  // stop(): waits for the engine thread (in-flight requests are aborted)

  // Thread-safe. Assigns the request id; the stream receives its events. Never throws for a bad
  // request: an invalid one gets a done event with finish_reason "error".
  std::shared_ptr<RequestStream> submit(Request request, RequestId* id_out = nullptr);
  // Thread-safe: aborts the request (its pages and slots are released at the next step).
  void cancel(RequestId id);
  // Thread-safe: blocks until no request is queued or running (new submissions still accepted).
  void wait_idle();
  // Stops the thread after aborting what is left. Idempotent.
  void stop();

  // Thread-safe copies for /metrics.
  ServingMetrics metrics() const;
  int64_t n_in_flight() const;

 private:
  void loop();
  void dispatch(EngineEvents& events);
  void finish(const Request& r, const char* reason, const std::string& error = {});

  struct Pending {
    Request request;
    std::shared_ptr<RequestStream> stream;
  };
  struct Live {
    std::shared_ptr<RequestStream> stream;
    double submit_s = 0, first_token_s = -1;
  };

  Engine engine_;
  mutable std::mutex mu_;  // inbox, counters below, metrics_
  std::condition_variable cv_, idle_cv_;
  std::vector<Pending> inbox_;
  std::vector<RequestId> cancels_;
  bool stopping_ = false;
  RequestId next_id_ = 1;
  int64_t n_in_flight_ = 0;  // submitted, not yet done
  ServingMetrics metrics_;
  std::unordered_map<RequestId, Live> live_;  // engine thread only
  std::thread thread_;
};

}  // namespace ds
