#include "replay/agentx_harness.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace ds {
namespace {

// The shift of every request start of a session when each gap between consecutive starts (root and
// branch requests together, recorded arrival_s) is shortened to at most cap_s: shift[i] for root
// turn i, branch_shift[b][j] for turn j of branch b. cap_s <= 0: no shift.
struct StartShifts {
  std::vector<double> root;
  std::vector<std::vector<double>> branch;
};

StartShifts start_shifts(const TraceSession& s, double cap_s) {
  StartShifts sh;
  sh.root.assign(s.turns.size(), 0.0);
  sh.branch.resize(s.branches.size());
  for (size_t b = 0; b < s.branches.size(); ++b) sh.branch[b].assign(s.branches[b].turns.size(), 0.0);
  if (cap_s <= 0) return sh;
  struct Start {
    double t;
    int branch;  // -1: root
    size_t turn;
  };
  std::vector<Start> starts;
  for (size_t i = 0; i < s.turns.size(); ++i) starts.push_back({s.turns[i].arrival_s, -1, i});
  for (size_t b = 0; b < s.branches.size(); ++b)
    for (size_t j = 0; j < s.branches[b].turns.size(); ++j)
      starts.push_back({s.branches[b].turns[j].arrival_s, int(b), j});
  std::stable_sort(starts.begin(), starts.end(), [](const Start& a, const Start& b) { return a.t < b.t; });
  double shift = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    if (k > 0) shift += std::max(0.0, starts[k].t - starts[k - 1].t - cap_s);
    (starts[k].branch < 0 ? sh.root[starts[k].turn] : sh.branch[size_t(starts[k].branch)][starts[k].turn]) =
        shift;
  }
  return sh;
}

}  // namespace

// Each end-to-start delay shrinks by how much closer compression brings its request's start to the
// start of the request it waits for (never below zero).
AgentxHarness::Delays AgentxHarness::compress_idle_gaps(const TraceSession& s, double cap_s) {
  const StartShifts sh = start_shifts(s, cap_s);
  Delays d;
  d.root.resize(s.turns.size());
  for (size_t i = 0; i < s.turns.size(); ++i)
    d.root[i] = i == 0 ? 0.0 : std::max(0.0, s.turns[i].think_time_s - (sh.root[i] - sh.root[i - 1]));
  d.branch_offset.resize(s.branches.size());
  d.branch.resize(s.branches.size());
  for (size_t b = 0; b < s.branches.size(); ++b) {
    const TraceBranch& br = s.branches[b];
    std::vector<double>& out = d.branch[b];
    out.resize(br.turns.size());
    const double spawn_shift =
        size_t(br.spawn_after) < sh.root.size() ? sh.root[size_t(br.spawn_after)] : 0.0;
    d.branch_offset[b] = br.turns.empty()
                             ? br.start_offset_s
                             : std::max(0.0, br.start_offset_s - (sh.branch[b][0] - spawn_shift));
    for (size_t j = 0; j < br.turns.size(); ++j)
      out[j] =
          j == 0 ? 0.0 : std::max(0.0, br.turns[j].think_time_s - (sh.branch[b][j] - sh.branch[b][j - 1]));
  }
  return d;
}

const char* to_string(AgentxPhase phase) {
  switch (phase) {
    case AgentxPhase::SnapshotWarmup:
      return "snapshot-warmup";
    case AgentxPhase::CacheWarmup:
      return "cache-warmup";
    case AgentxPhase::Drain:
      return "drain";
    case AgentxPhase::Profiling:
      return "profiling";
    case AgentxPhase::Cooldown:
      return "cooldown";
    case AgentxPhase::Done:
      return "done";
  }
  return "?";
}

AgentxHarness::AgentxHarness(const Trace& trace, int concurrency, uint64_t seed, const AgentxOptions& opt)
    : trace_(trace), opt_(opt), rng_(seed) {
  DS_CHECK(trace.closed_loop, "agentx harness: trace '{}' is open loop (needs sessions)", trace.source);
  DS_CHECK(concurrency >= 1, "agentx harness: concurrency must be >= 1, got {}", concurrency);
  DS_CHECK(
      opt.cache_warmup_s >= 0 && opt.profile_s > 0 && opt.system_idle_cap_s >= 0 && opt.trace_idle_cap_s >= 0,
      "agentx harness: bad durations (cache warm-up {} s, profile {} s, idle caps {} / {} s)",
      opt.cache_warmup_s, opt.profile_s, opt.system_idle_cap_s, opt.trace_idle_cap_s);
  DS_CHECK(opt.start_frac_lo >= 0 && opt.start_frac_lo <= opt.start_frac_hi && opt.start_frac_hi <= 1,
           "agentx harness: trajectory start ratios must satisfy 0 <= lo <= hi <= 1, got {} / {}",
           opt.start_frac_lo, opt.start_frac_hi);
  for (size_t s = 0; s < trace.sessions.size(); ++s)
    if (!trace.sessions[s].turns.empty()) order_sessions_.push_back(int(s));
  DS_CHECK(!order_sessions_.empty(), "agentx harness: trace '{}' has no turns", trace.source);
  delays_.reserve(trace.sessions.size());
  for (const TraceSession& s : trace.sessions) delays_.push_back(compress_idle_gaps(s, opt.trace_idle_cap_s));
  std::shuffle(order_sessions_.begin(), order_sessions_.end(), rng_);
  lanes_.resize(size_t(concurrency));
  for (int l = 0; l < concurrency; ++l) start_play(l, 0.0, true);
  initializing_ = false;
}

// A lane takes the next session (wrapping around the shuffled order) with a fresh salt. At the start
// of the run it begins at a sampled point of the root with one snapshot warm-up turn; a recycled
// lane plays the session from turn 0.
void AgentxHarness::start_play(int l, double now_s, bool from_start_point) {
  Lane& lane = lanes_[size_t(l)];
  set_context(lane.root_context, 0);
  for (Branch& b : lane.branches) set_context(b.context, 0);
  lane = Lane{};
  lane.session = order_sessions_[cursor_++ % order_sessions_.size()];
  lane.salt = ++plays_;
  const TraceSession& s = session_of(lane);
  lane.branches.assign(s.branches.size(), Branch{});
  if (from_start_point) {
    const size_t n = s.turns.size();
    std::uniform_real_distribution<double> u(opt_.start_frac_lo, opt_.start_frac_hi);
    const size_t last = n >= 2 ? n - 2 : 0;  // leave at least one turn to profile
    lane.next_root = std::min(size_t(u(rng_) * double(n)), last);
    for (size_t b = 0; b < s.branches.size(); ++b)  // sub-agents of the skipped past
      if (size_t(s.branches[b].spawn_after) < lane.next_root) lane.branches[b].done = true;
  }
  push(l, -1, lane.next_root, now_s, 0.0);
  lane.root_queued = true;
}

void AgentxHarness::push(int l, int branch, size_t turn, double base_s, double delay_s) {
  if (phase_ == AgentxPhase::Cooldown || phase_ == AgentxPhase::Done) return;  // nothing new starts
  Pending p{base_s, delay_s, order_++, l, branch, turn};
  ++lanes_[size_t(l)].pending;
  if ((phase_ == AgentxPhase::SnapshotWarmup && !initializing_) || phase_ == AgentxPhase::Drain) {
    held_.push_back(p);
    return;
  }
  if (phase_ == AgentxPhase::Profiling) p.t_s = base_s + delay_s;  // cache warm-up: no delays
  queue_.push(p);
}

// Sends the root's next turn once every branch it joins is done.
void AgentxHarness::try_root(int l, double now_s) {
  Lane& lane = lanes_[size_t(l)];
  if (lane.root_all_sent || lane.root_in_flight || lane.root_queued) return;
  const TraceSession& s = session_of(lane);
  for (size_t b = 0; b < s.branches.size(); ++b)
    if (size_t(s.branches[b].join_before) == lane.next_root && !lane.branches[b].done) return;
  push(l, -1, lane.next_root, now_s, delays_[size_t(lane.session)].root[lane.next_root]);
  lane.root_queued = true;
}

// After a completion: a drained tree recycles the lane.
void AgentxHarness::after_event(int l, double now_s) {
  Lane& lane = lanes_[size_t(l)];
  if (!lane.root_all_sent || lane.root_in_flight || lane.pending > 0) return;
  for (const Branch& b : lane.branches)
    if (!b.done) return;
  if (phase_ == AgentxPhase::Cooldown || phase_ == AgentxPhase::Done) return;
  start_play(l, now_s, false);
}

void AgentxHarness::start_phase(AgentxPhase phase, double now_s) {
  phase_ = phase;
  if (phase == AgentxPhase::CacheWarmup) cache_warmup_end_s_ = now_s + opt_.cache_warmup_s;
  if (phase == AgentxPhase::Drain) {  // stop issuing: keep the queued requests for profiling
    while (!queue_.empty()) held_.push_back(queue_.top()), queue_.pop();
    return;
  }
  if (phase == AgentxPhase::Profiling) {
    profile_start_s_ = now_s;
    profile_end_s_ = now_s + opt_.profile_s;
    live_t_s_ = now_s;
    live_at_profile_start_ = live_;
  }
  if (phase == AgentxPhase::Cooldown) {
    while (!queue_.empty()) --lanes_[size_t(queue_.top().lane)].pending, queue_.pop();
    return;
  }
  // Cache warm-up releases everything now; profiling re-bases each pending delay on its start.
  std::vector<Pending> all = std::move(held_);
  held_.clear();
  while (!queue_.empty()) all.push_back(queue_.top()), queue_.pop();
  for (Pending p : all) {
    p.t_s = phase == AgentxPhase::Profiling ? now_s + p.delay_s : now_s;
    queue_.push(p);
  }
}

// When nothing is in flight, every pending timer moves earlier by the same amount so that the next
// request is due within the system idle cap (AIPerf's global idle guard).
void AgentxHarness::cap_idle(double now_s) {
  if (phase_ != AgentxPhase::Profiling || in_flight_ > 0 || queue_.empty()) return;
  const double gap = queue_.top().t_s - now_s;
  if (gap <= opt_.system_idle_cap_s) return;
  const double shift = gap - opt_.system_idle_cap_s;
  std::vector<Pending> all;
  while (!queue_.empty()) all.push_back(queue_.top()), queue_.pop();
  for (Pending p : all) {
    p.t_s -= shift;
    queue_.push(p);
  }
  ++n_idle_shifts_;
  idle_skipped_s_ += shift;
}

double AgentxHarness::next_event_s() const {
  const double inf = std::numeric_limits<double>::infinity();
  const double top = queue_.empty() ? inf : queue_.top().t_s;
  switch (phase_) {
    case AgentxPhase::CacheWarmup:
      return std::min(top, cache_warmup_end_s_);
    case AgentxPhase::Profiling:
      return std::min(top, profile_end_s_);
    case AgentxPhase::SnapshotWarmup:
      return top;
    default:
      return inf;
  }
}

void AgentxHarness::set_context(int64_t& slot, int64_t tokens) {
  live_ += tokens - slot;
  slot = tokens;
}

void AgentxHarness::advance_live(double now_s) {
  if (phase_ != AgentxPhase::Profiling) return;
  const double t = std::min(now_s, profile_end_s_);
  if (t > live_t_s_) {
    live_integral_ += double(live_) * (t - live_t_s_);
    live_span_s_ += t - live_t_s_;
    live_t_s_ = t;
  }
}

double AgentxHarness::live_context_mean_tokens() const {
  return live_span_s_ > 0 ? live_integral_ / live_span_s_ : double(live_at_profile_start_);
}

std::optional<AgentxRequest> AgentxHarness::take_due(double now_s) {
  advance_live(now_s);
  if (phase_ == AgentxPhase::CacheWarmup && now_s >= cache_warmup_end_s_) {
    start_phase(AgentxPhase::Drain, now_s);
    if (in_flight_ == 0) start_phase(AgentxPhase::Profiling, now_s);
  }
  if (phase_ == AgentxPhase::Profiling && now_s >= profile_end_s_) {
    start_phase(AgentxPhase::Cooldown, now_s);
    if (in_flight_ == 0) phase_ = AgentxPhase::Done;
  }
  cap_idle(now_s);
  if (queue_.empty() || queue_.top().t_s > now_s) return std::nullopt;
  if (phase_ == AgentxPhase::Drain || phase_ == AgentxPhase::Cooldown || phase_ == AgentxPhase::Done)
    return std::nullopt;
  const Pending p = queue_.top();
  queue_.pop();
  Lane& lane = lanes_[size_t(p.lane)];
  --lane.pending;
  AgentxRequest r;
  r.lane = p.lane;
  r.session = lane.session;
  r.branch = p.branch;
  r.turn = p.turn;
  r.salt = lane.salt;
  r.warmup = phase_ != AgentxPhase::Profiling;
  r.one_token = phase_ == AgentxPhase::CacheWarmup;
  const TraceSession& s = session_of(lane);
  if (p.branch < 0) {
    lane.root_queued = false;
    lane.root_in_flight = true;
    const TraceTurn& t = s.turns[p.turn];
    set_context(lane.root_context, t.n_input_tokens + t.n_output_tokens);
  } else {
    Branch& b = lane.branches[size_t(p.branch)];
    b.in_flight = true;
    const TraceTurn& t = s.branches[size_t(p.branch)].turns[p.turn];
    set_context(b.context, t.n_input_tokens + t.n_output_tokens);
  }
  ++in_flight_;
  return r;
}

void AgentxHarness::done(const AgentxRequest& r, double now_s) {
  DS_CHECK(in_flight_ > 0 && r.lane >= 0 && size_t(r.lane) < lanes_.size(),
           "agentx harness: unknown request");
  advance_live(now_s);
  --in_flight_;
  Lane& lane = lanes_[size_t(r.lane)];
  const TraceSession& s = trace_.sessions[size_t(r.session)];
  if (r.session == lane.session) {
    if (r.branch < 0) {
      lane.root_in_flight = false;
      for (size_t b = 0; b < s.branches.size(); ++b)
        if (size_t(s.branches[b].spawn_after) == r.turn && !lane.branches[b].done) {
          lane.branches[b].spawned = true;
          push(r.lane, int(b), 0, now_s, delays_[size_t(r.session)].branch_offset[b]);
        }
      lane.next_root = r.turn + 1;
      if (lane.next_root >= s.turns.size())
        lane.root_all_sent = true;
      else
        try_root(r.lane, now_s);
    } else {
      Branch& b = lane.branches[size_t(r.branch)];
      const TraceBranch& tb = s.branches[size_t(r.branch)];
      b.in_flight = false;
      if (r.turn + 1 < tb.turns.size()) {
        push(r.lane, r.branch, r.turn + 1, now_s,
             delays_[size_t(r.session)].branch[size_t(r.branch)][r.turn + 1]);
      } else {
        b.done = true;
        set_context(b.context, 0);
        try_root(r.lane, now_s);
      }
    }
    after_event(r.lane, now_s);
  }
  if (in_flight_ == 0) {
    if (phase_ == AgentxPhase::SnapshotWarmup)
      start_phase(opt_.cache_warmup_s > 0 ? AgentxPhase::CacheWarmup : AgentxPhase::Profiling, now_s);
    else if (phase_ == AgentxPhase::Drain)
      start_phase(AgentxPhase::Profiling, now_s);
    else if (phase_ == AgentxPhase::Cooldown)
      phase_ = AgentxPhase::Done;
  }
  cap_idle(now_s);
}

}  // namespace ds
