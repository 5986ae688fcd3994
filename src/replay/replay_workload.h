// The replay harness's workload: which trace turn is sent when, and what is measured. Shared by
// the in-process replay (Engine, virtual or wall clock) and the endpoint replay (HTTP against any
// OpenAI-compatible server), so both send the same requests in the same order for a seed.
//   Closed loop: `concurrency` lanes, each on a session (shuffled by seed); a lane's first request
//   starts at a uniform start_frac point of its session and is a warm-up (excluded from stats, as
//   AgentX does); its next turn is due min(think_time, max_think_s) after the previous one finished;
//   a finished session is followed by the next one from turn 0 (a reused session gets fresh token
//   ids). Open loop: every turn at its arrival_s.
// Not thread-safe: one driver thread calls it.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "replay/replay.h"
#include "trace/prefix_oracle.h"
#include "trace/trace.h"

namespace ds {

// One request the workload wants sent now.
struct ReplaySend {
  int lane = -1;         // closed loop lane; -1 open loop
  AgentxRequest agentx;  // the AgentX harness's handle (agentx mode)
  bool warmup = false;
  const TraceTurn* turn = nullptr;
  uint64_t salt = 0;              // != 0: re-salted token ids (a reused session, or config.token_salt)
  std::vector<int32_t> tokens;    // prompt token ids (salted, taken modulo vocab_size)
  int64_t max_output_tokens = 1;  // recorded output length, capped by config.max_output_tokens
  int64_t oracle_hit_tokens = 0;  // theoretical hit of this prompt over the stream sent so far
  // config.live_output: the tokens the next prompt of this chain holds after this prompt, which the
  // simulated executor emits as this request's output (SamplingParams::forced_tokens).
  std::vector<int32_t> scripted_output;
};

class ReplayWorkload {
 public:
  // Throws ds::Error on an empty trace or a bad concurrency.
  ReplayWorkload(const Trace& trace, const ReplayConfig& config);

  bool has_arrivals() const { return agentx_ ? !agentx_->finished() : !arrivals_.empty(); }
  // Time of the next arrival (agentx: or phase deadline); requires has_arrivals().
  double next_arrival_s() const { return agentx_ ? agentx_->next_event_s() : arrivals_.top().t_s; }
  // The next turn due at `now_s`, or nullopt (none due; or max_requests reached, which drops the
  // remaining arrivals).
  std::optional<ReplaySend> take_due(double now_s);
  // The request finished (or failed) at now_s: its lane's next turn becomes due after the think
  // time (agentx: the harness decides, joins and spawns included).
  void done(const ReplaySend& r, double now_s);
  int64_t n_sent() const { return n_sent_; }
  // AgentX: the profiling window's start (NaN before it, and always NaN for the other harnesses).
  double profile_start_s() const { return agentx_ ? agentx_->profile_start_s() : std::nan(""); }
  const AgentxHarness* agentx() const { return agentx_.get(); }

 private:
  struct Lane {
    int session = -1;
    size_t next_turn = 0;
    uint64_t salt = 0;  // 0 for a session's first use; replays of a session get fresh tokens
    bool warmup_next = false;
  };
  struct Arrival {
    double t_s;
    int64_t order;  // tie-break: deterministic
    int lane;       // closed loop lane, or -1
    int session;
    size_t turn;
    bool operator>(const Arrival& o) const { return t_s != o.t_s ? t_s > o.t_s : order > o.order; }
  };

  const Trace& trace_;
  const ReplayConfig& cfg_;
  PrefixOracle oracle_;
  std::mt19937_64 rng_;
  std::vector<Lane> lanes_;
  std::vector<int> session_order_;
  size_t session_cursor_ = 0;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;
  int64_t order_ = 0;
  int64_t n_sent_ = 0;
  std::unique_ptr<AgentxHarness> agentx_;

  // A chain = the root turns of a lane's session, or one sub-agent branch: consecutive prompts that
  // extend each other. live_output keeps the next prompt of a chain built ahead of time.
  struct Prepared {
    int session = -1;
    size_t turn = 0;
    uint64_t salt = 0;
    std::vector<int32_t> tokens;
  };
  std::map<std::pair<int, int>, Prepared> prepared_;  // (lane, branch or -1) -> next prompt

  void lane_done(int lane, double now_s);
  std::vector<int32_t> materialize(const TraceTurn& turn, uint64_t salt) const;
  ReplaySend make_send(int lane, int branch, int session, const std::vector<TraceTurn>& chain, size_t turn,
                       uint64_t salt, bool warmup);
};

// One measured (non-warm-up), completed request.
struct RequestSample {
  int64_t n_prompt = 0, n_hit = 0, n_kv = 0, n_host = 0, n_oracle = 0, n_output = 0;
  double ttft_s = 0;
  double tpot_s = -1;  // < 0: fewer than two output tokens
};

// Fills the hit rates, token counts, TTFT/TPOT percentiles and n_requests of `m` from `samples`
// (hit_rate_by_tier from n_host: first tier = the rest, second tier = n_host). `censored_ttft_s`:
// how long each measured request still without a first token at the end has waited; they count in
// the TTFT percentiles (so a stalled run does not look fast) and in m.n_ttft_censored.
void summarize_samples(const std::vector<RequestSample>& samples, const std::vector<std::string>& tier_names,
                       RunMetrics& m, const std::vector<double>& censored_ttft_s = {});

// Throughput over a measurement window of `window_s`: output tokens produced in it per second (node
// and per GPU), and (prompt + output tokens of the measured requests) per second per GPU.
void set_throughput(RunMetrics& m, double window_s, int64_t output_tokens_in_window, int gpus);

}  // namespace ds
