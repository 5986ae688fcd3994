#include "server/serving_engine.h"

#include <chrono>

#include "core/check.h"

namespace ds {

std::optional<StreamEvent> RequestStream::next(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return !events_.empty(); }))
    return std::nullopt;
  StreamEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestStream::push(StreamEvent e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

ServingEngine::ServingEngine(const EngineConfig& config, Executor& executor, Clock& clock)
    : engine_(config, executor, clock) {
  for (const auto& t : config.cache.tiers) metrics_.tiers.push_back(t.name);
  thread_ = std::thread([this] { loop(); });
}

ServingEngine::~ServingEngine() {
  stop();
}

std::shared_ptr<RequestStream> ServingEngine::submit(Request request, RequestId* id_out) {
  auto stream = std::make_shared<RequestStream>();
  std::lock_guard<std::mutex> lock(mu_);
  request.id = next_id_++;
  if (id_out) *id_out = request.id;
  if (stopping_) {
    StreamEvent e;
    e.done = true;
    e.finish_reason = "error";
    e.error = "server is shutting down";
    stream->push(std::move(e));
    return stream;
  }
  ++n_in_flight_;
  inbox_.push_back({std::move(request), stream});
  cv_.notify_all();
  return stream;
}

void ServingEngine::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  cancels_.push_back(id);
  cv_.notify_all();
}

void ServingEngine::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return n_in_flight_ == 0 || stopping_; });
}

void ServingEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    idle_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

ServingMetrics ServingEngine::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

int64_t ServingEngine::n_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_in_flight_;
}

void ServingEngine::finish(const Request& r, const char* reason, const std::string& error) {
  auto it = live_.find(r.id);
  if (it == live_.end()) return;
  const double now = engine_.now_s();
  StreamEvent e;
  e.done = true;
  e.finish_reason = reason;
  e.error = error;
  e.n_prompt_tokens = r.n_prompt_tokens;
  e.n_cached_tokens = r.n_hit_tokens;
  e.n_output_tokens = r.n_output_tokens;
  it->second.stream->push(std::move(e));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::string(reason) == "stop" || std::string(reason) == "length") {
      ++metrics_.requests_finished;
      metrics_.prompt_tokens += r.n_prompt_tokens;
      metrics_.e2e_s.observe(now - it->second.submit_s);
      if (r.n_output_tokens > 1 && it->second.first_token_s >= 0)
        metrics_.tpot_s.observe((now - it->second.first_token_s) / double(r.n_output_tokens - 1));
    } else if (std::string(reason) == "abort") {
      ++metrics_.requests_aborted;
    } else {
      ++metrics_.requests_rejected;
    }
    --n_in_flight_;
    if (n_in_flight_ == 0) idle_cv_.notify_all();
  }
  live_.erase(it);
}

void ServingEngine::dispatch(EngineEvents& events) {
  const double now = events.now_s;
  std::unordered_map<RequestId, StreamEvent> by_request;
  for (size_t i = 0; i < events.tokens.size(); ++i) {
    StreamEvent& e = by_request[events.tokens[i].request_id];
    e.tokens.push_back(events.tokens[i].token);
    if (!events.logprobs.empty()) e.logprobs.push_back(std::move(events.logprobs[i]));
  }
  for (RequestId id : events.first_token) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    it->second.first_token_s = now;
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.ttft_s.observe(now - it->second.submit_s);
  }
  for (auto& [id, e] : by_request) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    it->second.stream->push(std::move(e));
  }
  for (const Request& r : events.finished) finish(r, r.stopped ? "stop" : "length");
  for (const Request& r : events.aborted) finish(r, "abort");
  for (const Request& r : events.rejected)
    finish(r, "error", "the prompt and max_tokens can never fit in the cache budget");
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.generation_tokens += int64_t(events.tokens.size());
  metrics_.n_running = engine_.scheduler().n_running();
  metrics_.n_waiting = engine_.scheduler().n_waiting();
  metrics_.preemptions = engine_.scheduler().n_preemptions();
  metrics_.steps = engine_.n_steps();
  metrics_.cache = engine_.cache().stats();
}

void ServingEngine::loop() {
  for (;;) {
    std::vector<Pending> inbox;
    std::vector<RequestId> cancels;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (inbox_.empty() && cancels_.empty() && !stopping_ && engine_.idle()) cv_.wait(lock);
      inbox.swap(inbox_);
      cancels.swap(cancels_);
      stopping = stopping_;
    }
    const double now = engine_.now_s();
    for (Pending& p : inbox) {
      const RequestId id = p.request.id;
      live_[id] = Live{p.stream, now, -1};
      try {
        engine_.add(std::move(p.request));
      } catch (const Error& e) {
        Request r;
        r.id = id;
        finish(r, "error", e.what());
      }
    }
    if (stopping)
      for (const auto& [id, live] : live_) cancels.push_back(id);
    for (RequestId id : cancels) engine_.abort(id);
    if (engine_.idle()) {
      if (stopping) break;
      continue;
    }
    EngineEvents events;
    try {
      events = engine_.step();
    } catch (const std::exception& e) {  // an executor failure: fail every request, keep serving
      std::vector<RequestId> ids;
      for (const auto& [id, live] : live_) ids.push_back(id);
      for (RequestId id : ids) {
        engine_.abort(id);
        Request r;
        r.id = id;
        finish(r, "error", std::string("engine step failed: ") + e.what());
      }
      continue;
    }
    dispatch(events);
    if (!events.executed && events.rejected.empty() && events.aborted.empty()) {
      // Nothing runnable (waiting for memory that running requests hold, or only transfers):
      // wait a little for a cancellation or new work instead of spinning.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
  // Drain the aborts of the last step.
  std::lock_guard<std::mutex> lock(mu_);
  idle_cv_.notify_all();
}

}  // namespace ds
