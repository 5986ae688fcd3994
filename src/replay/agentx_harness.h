// AgentxHarness: the request schedule of the InferenceX AgentX benchmark (AIPerf scenario
// `inferencex-agentx-mvp`, as InferenceX's benchmarks/benchmark_lib.sh build_replay_cmd invokes it)
// for a closed-loop trace whose sessions may have sub-agent branches. Semantics (AIPerf
// docs/tutorials/agentx-mvp.md and docs/benchmark-modes/semianalysis-agentx-faq.md):
//  - concurrency counts session trees: a lane holds one session (root + all its branches) until the
//    whole tree drains, then recycles to the next session from turn 0 with a fresh cache-bust salt;
//    sub-agent branches run in parallel with the root and do not count toward concurrency;
//  - a branch is spawned when its parent turn finishes (first turn after its offset); the parent's
//    joining turn waits for every branch it joins; background branches join nothing;
//  - snapshot warm-up: each lane starts at a uniform [start_lo, start_hi] fraction of its root turns
//    and sends that one turn (with the whole prefix) as warm-up; branches spawned earlier are skipped;
//  - cache warm-up (cache_warmup_s > 0, InferenceX day-0: --agentic-cache-warmup-duration 600):
//    after the snapshot warm-up drains, the same trajectories continue with no idle delays and
//    one-token outputs for cache_warmup_s, then the in-flight requests drain;
//  - trace idle-gap compression (AIPerf --trace-idle-gap-cap-seconds, locked to 10 s by the scenario
//    that InferenceX's day-0 recipe ran; InferenceX later passes 300): on each trace's recorded
//    request-start timeline (root and sub-agent requests together), a gap between consecutive starts
//    longer than trace_idle_cap_s is shortened to it, shifting everything after it earlier; each
//    end-to-start delay (think time, branch offset) shrinks by the shift between its request and the
//    one it waits for;
//  - profiling: from the resulting state, the compressed delays are kept; when nothing is in flight,
//    all pending timers shift together so that the next request is due within system_idle_cap_s
//    (10 s, AIPerf's global idle guard);
//  - after profile_s no new request starts; those in flight finish and are measured (cool-down).
// Every request before profiling is a warm-up request (not measured). Deterministic for a seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "trace/trace.h"

namespace ds {

struct AgentxOptions {
  double cache_warmup_s = 600;    // InferenceX day-0 K3 recipe (--agentic-cache-warmup-duration 600)
  double profile_s = 3600;        // InferenceX agentic default duration (AIPerf's own default: 1800)
  double system_idle_cap_s = 10;  // AIPerf --system-idle-gap-cap-seconds (global idle guard)
  double trace_idle_cap_s = 10;   // AIPerf --trace-idle-gap-cap-seconds (scenario lock); 0 = off
  double start_frac_lo = 0.25;    // InferenceX --trajectory-start-min-ratio
  double start_frac_hi = 0.75;    // InferenceX --trajectory-start-max-ratio
};

enum class AgentxPhase : uint8_t { SnapshotWarmup, CacheWarmup, Drain, Profiling, Cooldown, Done };
const char* to_string(AgentxPhase phase);

// One request the harness wants sent.
struct AgentxRequest {
  int lane = -1;
  int session = -1;
  int branch = -1;  // -1: the root conversation
  size_t turn = 0;  // index in the root's or the branch's turns
  bool warmup = false;
  bool one_token = false;  // cache warm-up: the output is limited to one token
  uint64_t salt = 0;       // cache-bust salt of this play of the session (never 0)
};

class AgentxHarness {
 public:
  // Throws ds::Error on an empty trace, an open-loop trace or a bad concurrency / option.
  AgentxHarness(const Trace& trace, int concurrency, uint64_t seed, const AgentxOptions& options);

  bool finished() const { return phase_ == AgentxPhase::Done; }
  // Time of the next event (a request due or a phase deadline); +inf when there is none.
  double next_event_s() const;
  // The next request due at now_s (phase transitions first); nullopt when none is due.
  std::optional<AgentxRequest> take_due(double now_s);
  // The request finished (or failed) at now_s.
  void done(const AgentxRequest& r, double now_s);

  AgentxPhase phase() const { return phase_; }
  double profile_start_s() const { return profile_start_s_; }  // NaN before profiling
  // Live context: the sum over lanes of each lane's latest root prompt + output and the latest
  // prompt + output of each of its unfinished branches, tokens — what a cache must hold for every
  // next request to hit. Time-averaged over the profiling window, and its value when profiling began.
  double live_context_mean_tokens() const;
  int64_t live_context_at_profile_start() const { return live_at_profile_start_; }
  int64_t n_idle_shifts() const { return n_idle_shifts_; }
  double idle_skipped_s() const { return idle_skipped_s_; }

 private:
  struct Branch {
    size_t next = 0;
    bool spawned = false, in_flight = false, done = false;
    int64_t context = 0;  // latest sent prompt + output, tokens (0 once done)
  };
  struct Lane {
    int session = -1;
    uint64_t salt = 0;
    size_t next_root = 0;  // next root turn to send
    bool root_in_flight = false, root_queued = false, root_all_sent = false;
    std::vector<Branch> branches;
    int pending = 0;           // queued (not yet sent) requests of this lane
    int64_t root_context = 0;  // latest sent root prompt + output, tokens
  };
  struct Delays {              // one session's end-to-start delays after trace idle-gap compression, s
    std::vector<double> root;  // [root turns]; root[0] unused
    std::vector<double> branch_offset;        // [branches]: first turn after the spawning root turn
    std::vector<std::vector<double>> branch;  // [branches][turns]; [b][0] unused
  };
  struct Pending {
    double t_s;
    double delay_s;  // recorded delay after `base`, kept for phase rebasing
    int64_t order;
    int lane, branch;
    size_t turn;
    bool operator>(const Pending& o) const { return t_s != o.t_s ? t_s > o.t_s : order > o.order; }
  };

  static Delays compress_idle_gaps(const TraceSession& s, double cap_s);
  void start_play(int lane, double now_s, bool from_start_point);
  void push(int lane, int branch, size_t turn, double base_s, double delay_s);
  void try_root(int lane, double now_s);
  void after_event(int lane, double now_s);
  void start_phase(AgentxPhase phase, double now_s);
  void cap_idle(double now_s);
  void advance_live(double now_s);  // integrates the live context up to now_s while profiling
  void set_context(int64_t& slot, int64_t tokens);
  const TraceSession& session_of(const Lane& l) const { return trace_.sessions[size_t(l.session)]; }

  const Trace& trace_;
  AgentxOptions opt_;
  std::vector<Delays> delays_;  // [sessions]
  std::mt19937_64 rng_;
  std::vector<int> order_sessions_;
  size_t cursor_ = 0;
  uint64_t plays_ = 0;
  std::vector<Lane> lanes_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::vector<Pending> held_;  // pushed while the phase releases nothing (snapshot, drain)
  int64_t order_ = 0;
  int64_t in_flight_ = 0;
  AgentxPhase phase_ = AgentxPhase::SnapshotWarmup;
  double cache_warmup_end_s_ = 0, profile_end_s_ = 0;
  double profile_start_s_ = std::nan("");
  int64_t n_idle_shifts_ = 0;
  double idle_skipped_s_ = 0;
  int64_t live_ = 0, live_at_profile_start_ = 0;
  double live_integral_ = 0, live_t_s_ = 0, live_span_s_ = 0;
  bool initializing_ = true;  // the lanes' first warm-up turns go straight to the queue
};

}  // namespace ds
