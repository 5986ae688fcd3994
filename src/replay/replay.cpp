#include "replay/replay.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <random>
#include <thread>
#include <unordered_map>

#include "core/check.h"
#include "core/hash.h"
#include "plan/economics.h"
#include "replay/offline_bound.h"
#include "replay/replay_workload.h"

namespace ds {
namespace {

struct InFlight {
  ReplaySend send;                   // without its tokens (they went into the request)
  std::vector<uint64_t> bound_keys;  // the prompt's page keys for the offline bound (until admitted)
  std::vector<int32_t> bound_tail;   // the prompt's tokens past those pages (decoded pages extend them)
  bool warmup = false;
  double send_s = 0;
  double first_token_s = -1;
  int64_t oracle_hit_tokens = 0;
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
        workload_(trace, cfg),
        bound_(bound_page_tokens(cfg.cache), bound_budget(cfg.cache),
               double(bound_page_tokens(cfg.cache) * cfg.cache.sizes.kv_bytes_per_token),
               double(cfg.cache.sizes.live_state_bytes), cfg.scheduler.reserve_full_prompt) {}

  RunMetrics run();

 private:
  void send_due();
  void send(ReplaySend r);
  void handle(EngineEvents& events);
  void sample_memory();
  RunMetrics metrics() const;
  void idle_until_next_arrival() {  // never past the end of the run
    double t = workload_.next_arrival_s();
    DS_CHECK(std::isfinite(t),
             "replay: nothing in flight and no arrival pending, but the workload is not done");
    engine_.clock().wait_until(cfg_.duration_s > 0 ? std::min(t, cfg_.duration_s) : t);
  }
  bool stopped() const { return cfg_.duration_s > 0 && engine_.now_s() >= cfg_.duration_s; }

  // The offline bound hashes pages of gcd(64, engine page) tokens: every engine page is then a union
  // of bound pages with the same residency, and every hit the engine can make (a whole number of
  // its pages) is a whole number of bound pages, so the bound holds for every cache model. (With a
  // fixed 64 a 16-token engine page could hit up to 48 tokens past the bound's last page.)
  static int64_t bound_page_tokens(const CacheConfig& c) { return std::gcd(c.page_tokens, int64_t{64}); }
  static double bound_budget(const CacheConfig& c) {
    double b = 0;
    for (const CacheTier& t : c.tiers) b += double(t.capacity_bytes);
    return b;
  }
  int64_t checkpoint_bytes() const {
    const CacheConfig& c = cfg_.cache;
    if (c.cache_model == "vllm") return c.vllm.block_bytes * c.vllm.kda_groups;
    if (c.cache_model == "sglang") return c.sglang.state_bytes;
    return c.sizes.checkpoint_bytes;
  }

  const Trace& trace_;
  const ReplayConfig& cfg_;
  Engine engine_;
  ReplayWorkload workload_;
  OfflineBound bound_;
  int64_t checkpoints_at_measure_ = 0;
  std::unordered_map<RequestId, InFlight> in_flight_;
  std::vector<RequestSample> samples_;
  RequestId next_id_ = 1;
  int64_t n_warmup_ = 0, n_warmup_open_ = 0, n_rejected_ = 0, n_steps_ = 0;
  int64_t n_output_total_ = 0, n_output_at_measure_ = 0;
  double measure_start_s_ = 0;
  bool measuring_ = false;  // the measurement window has started (warm-ups drained / profiling began)
  std::map<std::string, int64_t> peak_;
  LookupStats lookups_at_measure_;
  void start_measuring(double now) {
    if (measuring_) return;
    measuring_ = true;
    measure_start_s_ = now;
    n_output_at_measure_ = n_output_total_;
    lookups_at_measure_ = engine_.scheduler().lookup_stats();
    checkpoints_at_measure_ = engine_.cache().stats().checkpoints_created;
  }
};

void ReplayRun::send(ReplaySend r) {
  Request req;
  req.id = next_id_++;
  req.tokens = std::move(r.tokens);
  req.max_output_tokens = r.max_output_tokens;
  req.sampling.forced_from = static_cast<int64_t>(req.tokens.size());
  req.sampling.forced_tokens = std::move(r.scripted_output);
  if (r.warmup) ++n_warmup_, ++n_warmup_open_;
  if (req.tokens.empty()) {  // nothing to compute: the lane moves on
    workload_.done(r, engine_.now_s());
    return;
  }
  const bool warmup = r.warmup;
  const int64_t oracle = r.oracle_hit_tokens;
  const int64_t bound_page = bound_page_tokens(cfg_.cache);
  std::vector<uint64_t> keys = OfflineBound::page_keys(req.tokens, bound_page, true);
  std::vector<int32_t> tail(req.tokens.begin() + static_cast<std::ptrdiff_t>(keys.size()) * bound_page,
                            req.tokens.end());
  in_flight_.emplace(req.id, InFlight{.send = std::move(r),
                                      .bound_keys = std::move(keys),
                                      .bound_tail = std::move(tail),
                                      .warmup = warmup,
                                      .send_s = engine_.now_s(),
                                      .first_token_s = -1,
                                      .oracle_hit_tokens = oracle});
  engine_.add(std::move(req));
}

void ReplayRun::send_due() {
  while (auto r = workload_.take_due(engine_.now_s())) send(std::move(*r));
}

void ReplayRun::handle(EngineEvents& events) {
  const double now = events.now_s;
  for (RequestId id : events.admitted) {
    InFlight& info = in_flight_.at(id);  // (the bound ignores re-admissions after a preemption)
    bound_.admit(id, std::move(info.bound_keys), !info.warmup, now - events.step_s,
                 std::move(info.bound_tail));
    info.bound_keys.clear();
    info.bound_tail.clear();
  }
  for (RequestId id : events.first_token) {
    in_flight_.at(id).first_token_s = now;
    bound_.prefill_done(id, now);
  }
  for (const SampledToken& t : events.tokens) bound_.sampled(t.request_id, t.token, now);
  for (Request& req : events.rejected) {
    bound_.finish(req.id, {}, now);
    InFlight info = in_flight_.at(req.id);
    in_flight_.erase(req.id);
    ++n_rejected_;
    if (info.warmup && --n_warmup_open_ == 0 && !cfg_.agentx) start_measuring(now);
    workload_.done(info.send, now);
  }
  for (const Request& req : events.finished) {
    bound_.finish(req.id, std::span<const int32_t>(req.tokens).first(size_t(req.n_computed_tokens)), now);
    InFlight info = in_flight_.at(req.id);
    in_flight_.erase(req.id);
    if (info.warmup) {
      if (--n_warmup_open_ == 0 && !cfg_.agentx) start_measuring(now);
    } else {
      double tpot = req.n_output_tokens > 1
                        ? (now - info.first_token_s) / static_cast<double>(req.n_output_tokens - 1)
                        : -1;
      samples_.push_back({req.n_prompt_tokens, req.n_hit_tokens, req.n_kv_hit_tokens, req.n_host_hit_tokens,
                          info.oracle_hit_tokens, req.n_output_tokens, info.first_token_s - info.send_s,
                          tpot});
    }
    workload_.done(info.send, now);
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
  if (!cfg_.agentx && !cfg_.warmup) start_measuring(0);
  while (!stopped()) {
    send_due();
    if (cfg_.agentx && !measuring_ && !std::isnan(workload_.profile_start_s()))
      start_measuring(workload_.profile_start_s());
    if (engine_.idle()) {
      if (!workload_.has_arrivals()) break;
      idle_until_next_arrival();
      continue;
    }
    EngineEvents events = engine_.step();
    n_output_total_ += static_cast<int64_t>(events.tokens.size());
    handle(events);
    if (!events.executed) {  // rejections only, or nothing admissible: wait for the next arrival
      if (!events.rejected.empty() || engine_.idle()) continue;
      DS_CHECK(workload_.has_arrivals(), "replay: scheduler stalled with {} waiting and {} running",
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
  m.cache_model = cfg_.cache.cache_model;
  m.harness = cfg_.agentx ? "agentx" : cfg_.warmup ? "default" : "bench";
  for (size_t i = 0; i < cfg_.cache.tiers.size(); ++i) m.tiers += (i ? "," : "") + cfg_.cache.tiers[i].name;
  m.gpus = cfg_.gpus;
  m.kv_budget_tokens = cfg_.kv_budget_tokens;
  std::vector<std::string> tiers;
  for (const auto& t : cfg_.cache.tiers) tiers.push_back(t.name);
  // Requests still waiting for their first token count with the time they have waited so far.
  const double now = engine_.now_s();
  std::vector<double> censored;
  for (const auto& [id, info] : in_flight_)
    if (!info.warmup && info.first_token_s < 0) censored.push_back(now - info.send_s);
  summarize_samples(samples_, tiers, m, censored);
  m.elapsed_virtual_s = now;
  const double start = measuring_ ? measure_start_s_ : 0;
  const int64_t out0 = measuring_ ? n_output_at_measure_ : 0;
  set_throughput(m, m.elapsed_virtual_s - start, n_output_total_ - out0, cfg_.gpus);
  const LookupStats& l1 = engine_.scheduler().lookup_stats();
  const LookupStats l0 = measuring_ ? lookups_at_measure_ : LookupStats{};
  const double q = double(l1.queries - l0.queries), qp = double(l1.preempted_queries - l0.preempted_queries);
  if (q > 0) {
    m.vllm_device_hit_rate = double(l1.hits - l0.hits) / q;
    m.vllm_external_hit_rate = double(l1.external_hits - l0.external_hits) / q;
  }
  if (q + qp > 0)
    m.vllm_hit_rate_with_preempted =
        double(l1.hits - l0.hits + l1.preempted_hits - l0.preempted_hits + l1.external_hits -
               l0.external_hits + l1.preempted_external_hits - l0.preempted_external_hits) /
        (q + qp);
  m.n_lookups = l1.lookups - l0.lookups + l1.preempted_lookups - l0.preempted_lookups;
  m.n_warmup_requests = n_warmup_;
  m.n_rejected = n_rejected_;
  m.n_steps = n_steps_;
  m.n_preemptions = engine_.scheduler().n_preemptions();
  const CacheStats& st = engine_.cache().stats();
  m.checkpoints_created = st.checkpoints_created;
  m.checkpoints_dropped = st.checkpoints_dropped;  // left the cache for good (alone or with KV)
  m.held_hit_tokens = st.held_hit_tokens;
  m.overloaded_admissions = st.overloaded_admissions;
  if (const AgentxHarness* h = workload_.agentx()) {
    m.live_context_tokens = h->live_context_mean_tokens();
    m.live_context_start_tokens = h->live_context_at_profile_start();
  }
  if (m.n_prompt_tokens > 0)
    m.offline_bound_hit_rate = std::min(bound_.bound_hit_tokens(now), double(m.n_theoretical_hit_tokens)) /
                               double(m.n_prompt_tokens);
  if (m.n_hit_tokens > 0)
    m.checkpoint_bytes_per_hit_token = double(st.checkpoints_created - checkpoints_at_measure_) *
                                       double(checkpoint_bytes()) / double(m.n_hit_tokens);
  const TokenPrices prices =
      token_prices(cfg_.gpu_hour_usd, cfg_.gpus, m.window_s, m.n_prompt_tokens, n_output_total_ - out0);
  m.usd_per_m_input_tokens = prices.usd_per_m_input;
  m.usd_per_m_output_tokens = prices.usd_per_m_output;
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
  RunMetrics m = run_replay(trace, executor, clock, config);
  const StepCost& c = executor.total_cost();  // the simulator's own breakdown of the virtual time
  m.time_breakdown_s = {
      {"weights", c.weights_s},   {"gemm", c.gemm_s},         {"attn", c.attn_s},
      {"kda", c.kda_s},           {"comm", c.comm_s},         {"checkpoint", c.checkpoint_s},
      {"transfer", c.transfer_s}, {"overhead", c.overhead_s}, {"total", c.total_s}};
  return m;
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
