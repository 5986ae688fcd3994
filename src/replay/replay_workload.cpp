#include "replay/replay_workload.h"

#include <algorithm>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

ReplayWorkload::ReplayWorkload(const Trace& trace, const ReplayConfig& cfg)
    : trace_(trace), cfg_(cfg), oracle_(cfg.cache.page_tokens), rng_(cfg.seed) {
  if (cfg_.agentx) {
    agentx_ = std::make_unique<AgentxHarness>(trace_, cfg_.concurrency, cfg_.seed, cfg_.agentx_options);
    return;
  }
  if (!trace_.closed_loop) {
    for (size_t s = 0; s < trace_.sessions.size(); ++s)
      for (size_t t = 0; t < trace_.sessions[s].turns.size(); ++t)
        arrivals_.push({trace_.sessions[s].turns[t].arrival_s, order_++, -1, static_cast<int>(s), t});
    DS_CHECK(!arrivals_.empty(), "replay: trace '{}' has no turns", trace_.source);
    return;
  }
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

std::vector<int32_t> ReplayWorkload::materialize(const TraceTurn& turn, uint64_t salt) const {
  std::vector<int32_t> tokens = turn_tokens(turn, trace_.block_tokens);
  if (salt != 0) {
    uint64_t k = splitmix64(salt);
    for (int32_t& t : tokens) t = static_cast<int32_t>((static_cast<uint64_t>(t) ^ k) & 0x7fffffff);
  }
  if (cfg_.vocab_size > 0)
    for (int32_t& t : tokens) t %= cfg_.vocab_size;
  return tokens;
}

ReplaySend ReplayWorkload::make_send(int lane, int branch, int session, const std::vector<TraceTurn>& chain,
                                     size_t turn_index, uint64_t salt, bool warmup) {
  const TraceTurn& turn = chain[turn_index];
  ReplaySend r;
  r.lane = lane;
  r.turn = &turn;
  r.warmup = warmup;
  r.salt = salt;
  if (cfg_.token_salt != 0) r.salt = splitmix64(r.salt ^ cfg_.token_salt) | 1;
  const auto key = std::make_pair(lane, branch);
  auto prep = prepared_.find(key);
  if (prep != prepared_.end() && prep->second.session == session && prep->second.turn == turn_index &&
      prep->second.salt == r.salt)
    r.tokens = std::move(prep->second.tokens);
  else
    r.tokens = materialize(turn, r.salt);
  if (prep != prepared_.end()) prepared_.erase(prep);
  r.max_output_tokens = std::max<int64_t>(turn.n_output_tokens, 1);
  if (cfg_.max_output_tokens > 0) r.max_output_tokens = std::min(r.max_output_tokens, cfg_.max_output_tokens);
  r.oracle_hit_tokens = oracle_.observe(r.tokens);
  // Live output: the next prompt of the chain, with the ids of this prompt's partial last block
  // (a hash-id trace names a partial block and the full block it grows into differently, though
  // the text only grew), decides what this request decodes.
  if (cfg_.live_output && turn_index + 1 < chain.size()) {
    const TraceTurn& next_turn = chain[turn_index + 1];
    std::vector<int32_t> next = materialize(next_turn, r.salt);
    const size_t P = r.tokens.size(), B = size_t(trace_.block_tokens), full = P / B;
    const bool same_blocks = next_turn.hash_ids.size() >= full && turn.hash_ids.size() >= full &&
                             std::equal(turn.hash_ids.begin(), turn.hash_ids.begin() + std::ptrdiff_t(full),
                                        next_turn.hash_ids.begin());
    if (same_blocks && next.size() > P) {
      std::copy(r.tokens.begin() + std::ptrdiff_t(full * B), r.tokens.end(),
                next.begin() + std::ptrdiff_t(full * B));
      if (std::equal(r.tokens.begin(), r.tokens.end(), next.begin())) {
        const size_t n_out = std::min<size_t>(size_t(r.max_output_tokens), next.size() - P);
        r.scripted_output.assign(next.begin() + std::ptrdiff_t(P), next.begin() + std::ptrdiff_t(P + n_out));
        std::vector<int32_t> seen = r.tokens;  // the decoded pages exist for the next turn (oracle)
        seen.insert(seen.end(), r.scripted_output.begin(), r.scripted_output.end());
        oracle_.observe(seen);
        prepared_[key] = Prepared{session, turn_index + 1, r.salt, std::move(next)};
      }
    }
  }
  ++n_sent_;
  return r;
}

std::optional<ReplaySend> ReplayWorkload::take_due(double now_s) {
  if (agentx_) {
    const std::optional<AgentxRequest> a = agentx_->take_due(now_s);
    if (!a) return std::nullopt;
    const TraceSession& s = trace_.sessions[size_t(a->session)];
    const std::vector<TraceTurn>& chain = a->branch < 0 ? s.turns : s.branches[size_t(a->branch)].turns;
    ReplaySend r = make_send(a->lane, a->branch, a->session, chain, a->turn, a->salt, a->warmup);
    if (a->one_token) r.max_output_tokens = 1;
    r.agentx = *a;
    return r;
  }
  if (arrivals_.empty() || arrivals_.top().t_s > now_s) return std::nullopt;
  if (cfg_.max_requests > 0 && n_sent_ >= cfg_.max_requests) {
    arrivals_ = {};
    return std::nullopt;
  }
  const Arrival a = arrivals_.top();
  arrivals_.pop();
  bool warmup = false;
  uint64_t salt = 0;
  if (a.lane >= 0) {
    Lane& lane = lanes_[static_cast<size_t>(a.lane)];
    warmup = lane.warmup_next;
    lane.warmup_next = false;
    salt = lane.salt;
  }
  return make_send(a.lane, -1, a.session, trace_.sessions[static_cast<size_t>(a.session)].turns, a.turn, salt,
                   warmup);
}

void ReplayWorkload::done(const ReplaySend& r, double now_s) {
  if (agentx_)
    agentx_->done(r.agentx, now_s);
  else
    lane_done(r.lane, now_s);
}

void ReplayWorkload::lane_done(int lane_index, double now_s) {
  if (lane_index < 0) return;
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
  arrivals_.push({now_s + think_s, order_++, lane_index, lane.session, lane.next_turn});
}

void summarize_samples(const std::vector<RequestSample>& samples, const std::vector<std::string>& tier_names,
                       RunMetrics& m, const std::vector<double>& censored_ttft_s) {
  std::vector<double> ttft, tpot;
  int64_t n_host = 0;
  for (const RequestSample& s : samples) {
    m.n_prompt_tokens += s.n_prompt;
    m.n_hit_tokens += s.n_hit;
    m.n_kv_reachable_tokens += s.n_kv;
    m.n_theoretical_hit_tokens += s.n_oracle;
    m.n_output_tokens += s.n_output;
    n_host += s.n_host;
    ttft.push_back(s.ttft_s);
    if (s.tpot_s >= 0) tpot.push_back(s.tpot_s);
  }
  ttft.insert(ttft.end(), censored_ttft_s.begin(), censored_ttft_s.end());
  m.n_ttft_censored = static_cast<int64_t>(censored_ttft_s.size());
  double denom = std::max<double>(static_cast<double>(m.n_prompt_tokens), 1.0);
  m.theoretical_hit_rate = static_cast<double>(m.n_theoretical_hit_tokens) / denom;
  m.realized_hit_rate = static_cast<double>(m.n_hit_tokens) / denom;
  m.kv_reachable_rate = static_cast<double>(m.n_kv_reachable_tokens) / denom;
  if (!tier_names.empty())
    m.hit_rate_by_tier[tier_names[0]] = static_cast<double>(m.n_hit_tokens - n_host) / denom;
  if (tier_names.size() > 1) m.hit_rate_by_tier[tier_names[1]] = static_cast<double>(n_host) / denom;
  m.ttft_p50_s = percentile(ttft, 50);
  m.ttft_p90_s = percentile(ttft, 90);
  m.ttft_p99_s = percentile(ttft, 99);
  m.tpot_p50_s = percentile(tpot, 50);
  m.interactivity_tok_s = m.tpot_p50_s > 0 ? 1.0 / m.tpot_p50_s : 0;
  m.n_requests = static_cast<int64_t>(samples.size());
}

void set_throughput(RunMetrics& m, double window_s, int64_t output_tokens_in_window, int gpus) {
  m.window_s = window_s;
  if (window_s <= 0) return;
  const double g = std::max(gpus, 1);
  m.output_tok_s_total = static_cast<double>(output_tokens_in_window) / window_s;
  m.output_tok_s_per_gpu = m.output_tok_s_total / g;
  m.total_tok_s_per_gpu = static_cast<double>(m.n_prompt_tokens + m.n_output_tokens) / window_s / g;
}

}  // namespace ds
