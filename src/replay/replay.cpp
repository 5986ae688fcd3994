#include "replay/replay.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <thread>
#include <unordered_map>

#include "core/check.h"
#include "core/hash.h"
#include "trace/prefix_oracle.h"

namespace ds {
namespace {

struct Lane {
  int session = -1;
  size_t next_turn = 0;
  uint64_t salt = 0;  // 0 for a session's first use; replays of a session get fresh tokens
  bool warmup_next = false;
};

struct InFlight {
  int lane = -1;  // -1: open loop
  bool warmup = false;
  double send_s = 0;
  double first_token_s = -1;
  int64_t oracle_hit_tokens = 0;
};

struct Arrival {
  double t_s;
  int64_t order;  // tie-break: deterministic
  int lane;       // closed loop lane, or -1
  int session;    // open loop: the turn to send
  size_t turn;
  bool operator>(const Arrival& o) const { return t_s != o.t_s ? t_s > o.t_s : order > o.order; }
};

struct Sample {  // one measured, completed request
  int64_t n_prompt, n_hit, n_kv, n_host, n_oracle, n_output;
  double ttft_s, tpot_s;
};

// Sends the trace's turns into the Engine at their times (closed or open loop) and turns the
// engine's events into RunMetrics. The engine runs the steps; this class only decides when
// requests arrive and waits on the engine's clock for the next arrival.
class ReplayRun {
 public:
  ReplayRun(const Trace& trace, Executor& executor, Clock& clock, const ReplayConfig& cfg)
      : trace_(trace),
        cfg_(cfg),
        engine_(EngineConfig{cfg.scheduler, cfg.cache, false}, executor, clock),
        oracle_(cfg.cache.page_tokens),
        rng_(cfg.seed) {}

  RunMetrics run();

 private:
  void start_closed_loop();
  void start_open_loop();
  void send_due();
  void send_turn(const Arrival& a);
  void handle(EngineEvents& events);
  void lane_done(int lane_index);
  void sample_memory();
  RunMetrics metrics() const;
  void idle_until_next_arrival() {  // never past the end of the run
    double t = arrivals_.top().t_s;
    engine_.clock().wait_until(cfg_.duration_s > 0 ? std::min(t, cfg_.duration_s) : t);
  }
  bool stopped() const { return cfg_.duration_s > 0 && engine_.now_s() >= cfg_.duration_s; }

  const Trace& trace_;
  const ReplayConfig& cfg_;
  Engine engine_;
  PrefixOracle oracle_;
  std::mt19937_64 rng_;
  std::vector<Lane> lanes_;
  std::vector<int> session_order_;
  size_t session_cursor_ = 0;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;
  std::unordered_map<RequestId, InFlight> in_flight_;
  std::vector<Sample> samples_;
  RequestId next_id_ = 1;
  int64_t order_ = 0;
  int64_t n_sent_ = 0, n_warmup_ = 0, n_warmup_open_ = 0, n_rejected_ = 0, n_steps_ = 0;
  int64_t n_output_total_ = 0, n_output_at_measure_ = 0;
  double measure_start_s_ = 0;
  std::map<std::string, int64_t> peak_;
};

void ReplayRun::start_closed_loop() {
  DS_CHECK(cfg_.concurrency >= 1, "replay: concurrency must be >= 1, got {}", cfg_.concurrency);
  for (size_t s = 0; s < trace_.sessions.size(); ++s)
    if (!trace_.sessions[s].turns.empty()) session_order_.push_back(static_cast<int>(s));
  DS_CHECK(!session_order_.empty(), "replay: trace '{}' has no turns", trace_.source);
  std::shuffle(session_order_.begin(), session_order_.end(), rng_);
  std::uniform_real_distribution<double> start(cfg_.start_frac_lo, cfg_.start_frac_hi);
  lanes_.resize(static_cast<size_t>(cfg_.concurrency));
  for (size_t l = 0; l < lanes_.size(); ++l) {
    Lane& lane = lanes_[l];
    lane.session = session_order_[session_cursor_ % session_order_.size()];
    lane.salt = session_cursor_ / session_order_.size();  // > 0 when sessions are reused
    ++session_cursor_;
    const auto& turns = trace_.sessions[static_cast<size_t>(lane.session)].turns;
    lane.next_turn = cfg_.warmup ? static_cast<size_t>(start(rng_) * static_cast<double>(turns.size())) : 0;
    lane.next_turn = std::min(lane.next_turn, turns.size() - 1);
    lane.warmup_next = cfg_.warmup;
    arrivals_.push({0.0, order_++, static_cast<int>(l), lane.session, lane.next_turn});
  }
}

void ReplayRun::start_open_loop() {
  for (size_t s = 0; s < trace_.sessions.size(); ++s)
    for (size_t t = 0; t < trace_.sessions[s].turns.size(); ++t)
      arrivals_.push({trace_.sessions[s].turns[t].arrival_s, order_++, -1, static_cast<int>(s), t});
  DS_CHECK(!arrivals_.empty(), "replay: trace '{}' has no turns", trace_.source);
}

void ReplayRun::send_turn(const Arrival& a) {
  const TraceTurn& turn = trace_.sessions[static_cast<size_t>(a.session)].turns[a.turn];
  bool warmup = false;
  uint64_t salt = 0;
  if (a.lane >= 0) {
    Lane& lane = lanes_[static_cast<size_t>(a.lane)];
    warmup = lane.warmup_next;
    lane.warmup_next = false;
    salt = lane.salt;
  }
  Request req;
  req.id = next_id_++;
  req.tokens = turn_tokens(turn, trace_.block_tokens);
  if (salt != 0) {
    uint64_t k = splitmix64(salt);
    for (int32_t& t : req.tokens) t = static_cast<int32_t>((static_cast<uint64_t>(t) ^ k) & 0x7fffffff);
  }
  if (cfg_.vocab_size > 0)
    for (int32_t& t : req.tokens) t %= cfg_.vocab_size;
  req.max_output_tokens = std::max<int64_t>(turn.n_output_tokens, 1);
  if (cfg_.max_output_tokens > 0)
    req.max_output_tokens = std::min(req.max_output_tokens, cfg_.max_output_tokens);
  InFlight info{.lane = a.lane,
                .warmup = warmup,
                .send_s = engine_.now_s(),
                .first_token_s = -1,
                .oracle_hit_tokens = 0};
  info.oracle_hit_tokens = oracle_.observe(req.tokens);
  ++n_sent_;
  if (warmup) ++n_warmup_, ++n_warmup_open_;
  in_flight_.emplace(req.id, info);
  if (req.tokens.empty()) {  // nothing to compute: the lane moves on
    in_flight_.erase(req.id);
    if (a.lane >= 0) lane_done(a.lane);
    return;
  }
  engine_.add(std::move(req));
}

void ReplayRun::send_due() {
  while (!arrivals_.empty() && arrivals_.top().t_s <= engine_.now_s()) {
    if (cfg_.max_requests > 0 && n_sent_ >= cfg_.max_requests) {
      arrivals_ = {};
      return;
    }
    Arrival a = arrivals_.top();
    arrivals_.pop();
    send_turn(a);
  }
}

// The lane's request finished (or was rejected): schedule its next turn after the think time.
void ReplayRun::lane_done(int lane_index) {
  Lane& lane = lanes_[static_cast<size_t>(lane_index)];
  const auto* turns = &trace_.sessions[static_cast<size_t>(lane.session)].turns;
  double think_s = 0;
  if (++lane.next_turn < turns->size()) {
    think_s = std::clamp((*turns)[lane.next_turn].think_time_s, 0.0, cfg_.max_think_s);
  } else {  // next session from turn 0; without a duration each session is used once
    if (cfg_.duration_s <= 0 && session_cursor_ >= session_order_.size()) return;  // lane retires
    lane.session = session_order_[session_cursor_ % session_order_.size()];
    lane.salt = session_cursor_ / session_order_.size();
    ++session_cursor_;
    lane.next_turn = 0;
  }
  arrivals_.push({engine_.now_s() + think_s, order_++, lane_index, lane.session, lane.next_turn});
}

void ReplayRun::handle(EngineEvents& events) {
  const double now = events.now_s;
  for (RequestId id : events.first_token) in_flight_.at(id).first_token_s = now;
  for (Request& req : events.rejected) {
    InFlight info = in_flight_.at(req.id);
    in_flight_.erase(req.id);
    ++n_rejected_;
    if (info.warmup && --n_warmup_open_ == 0) measure_start_s_ = now, n_output_at_measure_ = n_output_total_;
    if (info.lane >= 0) lane_done(info.lane);
  }
  for (const Request& req : events.finished) {
    InFlight info = in_flight_.at(req.id);
    in_flight_.erase(req.id);
    if (info.warmup) {
      if (--n_warmup_open_ == 0) measure_start_s_ = now, n_output_at_measure_ = n_output_total_;
    } else {
      double tpot = req.n_output_tokens > 1
                        ? (now - info.first_token_s) / static_cast<double>(req.n_output_tokens - 1)
                        : -1;
      samples_.push_back({req.n_prompt_tokens, req.n_hit_tokens, req.n_kv_hit_tokens, req.n_host_hit_tokens,
                          info.oracle_hit_tokens, req.n_output_tokens, info.first_token_s - info.send_s,
                          tpot});
    }
    if (info.lane >= 0) lane_done(info.lane);
  }
}

void ReplayRun::sample_memory() {
  const CacheStats& st = engine_.cache().stats();
  auto peak = [&](const char* kind, int64_t v) { peak_[kind] = std::max(peak_[kind], v); };
  peak("kv", st.tiers[0].kv_bytes);
  peak("checkpoint", st.tiers[0].checkpoint_bytes);
  peak("live_state", st.tiers[0].live_bytes);
  if (cfg_.cache.tiers.size() > 1) peak("host", st.tiers[1].total_bytes());
}

RunMetrics ReplayRun::run() {
  if (trace_.closed_loop)
    start_closed_loop();
  else
    start_open_loop();
  while (!stopped()) {
    send_due();
    if (engine_.idle()) {
      if (arrivals_.empty()) break;
      idle_until_next_arrival();
      continue;
    }
    EngineEvents events = engine_.step();
    n_output_total_ += static_cast<int64_t>(events.tokens.size());
    handle(events);
    if (!events.executed) {  // rejections only, or nothing admissible: wait for the next arrival
      if (!events.rejected.empty() || engine_.idle()) continue;
      DS_CHECK(!arrivals_.empty(), "replay: scheduler stalled with {} waiting and {} running",
               engine_.scheduler().n_waiting(), engine_.scheduler().n_running());
      idle_until_next_arrival();
      continue;
    }
    ++n_steps_;
    sample_memory();
  }
  return metrics();
}

RunMetrics ReplayRun::metrics() const {
  RunMetrics m;
  m.label = cfg_.label;
  m.concurrency = trace_.closed_loop ? cfg_.concurrency : 0;
  m.retention = cfg_.cache.retention;
  m.eviction = cfg_.cache.eviction;
  for (size_t i = 0; i < cfg_.cache.tiers.size(); ++i) m.tiers += (i ? "," : "") + cfg_.cache.tiers[i].name;
  m.gpus = cfg_.gpus;
  m.kv_budget_tokens = cfg_.kv_budget_tokens;
  std::vector<double> ttft, tpot;
  int64_t n_host = 0;
  for (const Sample& s : samples_) {
    m.n_prompt_tokens += s.n_prompt;
    m.n_hit_tokens += s.n_hit;
    m.n_kv_reachable_tokens += s.n_kv;
    m.n_theoretical_hit_tokens += s.n_oracle;
    m.n_output_tokens += s.n_output;
    n_host += s.n_host;
    ttft.push_back(s.ttft_s);
    if (s.tpot_s >= 0) tpot.push_back(s.tpot_s);
  }
  double denom = std::max<double>(static_cast<double>(m.n_prompt_tokens), 1.0);
  m.theoretical_hit_rate = static_cast<double>(m.n_theoretical_hit_tokens) / denom;
  m.realized_hit_rate = static_cast<double>(m.n_hit_tokens) / denom;
  m.kv_reachable_rate = static_cast<double>(m.n_kv_reachable_tokens) / denom;
  m.hit_rate_by_tier[cfg_.cache.tiers.at(0).name] = static_cast<double>(m.n_hit_tokens - n_host) / denom;
  if (cfg_.cache.tiers.size() > 1)
    m.hit_rate_by_tier[cfg_.cache.tiers[1].name] = static_cast<double>(n_host) / denom;
  m.ttft_p50_s = percentile(ttft, 50);
  m.ttft_p90_s = percentile(ttft, 90);
  m.ttft_p99_s = percentile(ttft, 99);
  m.tpot_p50_s = percentile(tpot, 50);
  m.interactivity_tok_s = m.tpot_p50_s > 0 ? 1.0 / m.tpot_p50_s : 0;
  m.elapsed_virtual_s = engine_.now_s();
  double start = n_warmup_open_ == 0 ? measure_start_s_ : 0;
  int64_t out0 = n_warmup_open_ == 0 ? n_output_at_measure_ : 0;
  double window = m.elapsed_virtual_s - start;
  m.output_tok_s_per_gpu =
      window > 0 ? static_cast<double>(n_output_total_ - out0) / window / std::max(cfg_.gpus, 1) : 0;
  m.n_requests = static_cast<int64_t>(samples_.size());
  m.n_warmup_requests = n_warmup_;
  m.n_rejected = n_rejected_;
  m.n_steps = n_steps_;
  m.n_preemptions = engine_.scheduler().n_preemptions();
  const CacheStats& st = engine_.cache().stats();
  m.checkpoints_created = st.checkpoints_created;
  m.checkpoints_dropped = st.checkpoints_dropped;  // left the cache for good (alone or with KV)
  m.peak_bytes_by_kind = peak_;
  return m;
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double pos = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

RunMetrics run_replay(const Trace& trace, const CostModel& cost, const ReplayConfig& config) {
  SimExecutor executor(cost, config.executor);
  VirtualClock clock;
  return run_replay(trace, executor, clock, config);
}

RunMetrics run_replay(const Trace& trace, Executor& executor, Clock& clock, const ReplayConfig& config) {
  ReplayRun run(trace, executor, clock, config);
  return run.run();
}

std::vector<RunMetrics> run_sweep(const Trace& trace, const CostModel& cost,
                                  const std::vector<ReplayConfig>& configs, int threads,
                                  const std::function<void(size_t)>& on_done) {
  std::vector<RunMetrics> results(configs.size());
  std::vector<std::exception_ptr> errors(configs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < configs.size(); i = next++) {
      try {
        results[i] = run_replay(trace, cost, configs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (on_done) on_done(i);
    }
  };
  size_t n_threads = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, configs.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

}  // namespace ds
