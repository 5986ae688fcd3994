#include "trace/trace_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "trace/prefix_oracle.h"

namespace ds {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t n = v.size();
  std::sort(v.begin(), v.end());
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {  // nearest rank, v non-empty
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

struct TurnRef {
  size_t session, turn;
};

std::vector<TurnRef> visit_order(const Trace& trace) {
  std::vector<TurnRef> order;
  for (size_t s = 0; s < trace.sessions.size(); ++s)
    for (size_t t = 0; t < trace.sessions[s].turns.size(); ++t) order.push_back({s, t});
  if (!trace.closed_loop)
    std::stable_sort(order.begin(), order.end(), [&](const TurnRef& a, const TurnRef& b) {
      return trace.sessions[a.session].turns[a.turn].arrival_s <
             trace.sessions[b.session].turns[b.turn].arrival_s;
    });
  return order;
}

}  // namespace

std::vector<std::vector<int64_t>> theoretical_hit_tokens(const Trace& trace) {
  std::vector<std::vector<int64_t>> hits(trace.sessions.size());
  for (size_t s = 0; s < trace.sessions.size(); ++s) hits[s].assign(trace.sessions[s].turns.size(), 0);
  PrefixOracle oracle(trace.block_tokens);
  for (const TurnRef& ref : visit_order(trace)) {
    const TraceTurn& turn = trace.sessions[ref.session].turns[ref.turn];
    const int64_t full = std::min<int64_t>(turn.n_input_tokens / trace.block_tokens,
                                           static_cast<int64_t>(turn.hash_ids.size()));
    hits[ref.session][ref.turn] =
        oracle.observe_blocks(std::span(turn.hash_ids).first(size_t(full))) * trace.block_tokens;
  }
  return hits;
}

double theoretical_hit_rate(const Trace& trace) {
  std::vector<std::vector<int64_t>> hits = theoretical_hit_tokens(trace);
  int64_t hit = 0, total = 0;
  for (size_t s = 0; s < hits.size(); ++s) {
    hit = std::accumulate(hits[s].begin(), hits[s].end(), hit);
    for (const TraceTurn& t : trace.sessions[s].turns) total += t.n_input_tokens;
  }
  return total == 0 ? 0.0 : static_cast<double>(hit) / static_cast<double>(total);
}

TraceSummary summarize(const Trace& trace) {
  TraceSummary sum;
  std::vector<double> in, out, turns;
  for (const TraceSession& s : trace.sessions) {
    turns.push_back(static_cast<double>(s.turns.size()));
    for (const TraceTurn& t : s.turns) {
      in.push_back(static_cast<double>(t.n_input_tokens));
      out.push_back(static_cast<double>(t.n_output_tokens));
      sum.total_input_tokens += t.n_input_tokens;
      sum.total_output_tokens += t.n_output_tokens;
    }
  }
  sum.n_sessions = static_cast<int64_t>(trace.sessions.size());
  sum.n_turns = static_cast<int64_t>(in.size());
  sum.median_input_tokens = median(in);
  sum.median_output_tokens = median(out);
  sum.mean_output_tokens =
      in.empty() ? 0 : static_cast<double>(sum.total_output_tokens) / static_cast<double>(in.size());
  sum.median_turns_per_session = median(turns);
  return sum;
}

TraceDepth trace_depth(const Trace& trace) {
  TraceDepth d;
  std::vector<double> in, out, root_ctx, root_turns;
  int64_t over = 0;
  for (const TraceSession& s : trace.sessions) {
    root_turns.push_back(static_cast<double>(s.turns.size()));
    for (const TraceTurn& t : s.turns) {
      in.push_back(static_cast<double>(t.n_input_tokens));
      out.push_back(static_cast<double>(t.n_output_tokens));
      root_ctx.push_back(static_cast<double>(t.n_input_tokens + t.n_output_tokens));
      over += t.n_input_tokens + t.n_output_tokens > 256000;
    }
    for (const TraceBranch& b : s.branches)
      for (const TraceTurn& t : b.turns) {
        in.push_back(static_cast<double>(t.n_input_tokens));
        out.push_back(static_cast<double>(t.n_output_tokens));
      }
  }
  d.n_sessions = static_cast<int64_t>(trace.sessions.size());
  d.n_requests = static_cast<int64_t>(in.size());
  d.n_root_turns = static_cast<int64_t>(root_ctx.size());
  if (in.empty()) return d;
  d.subagent_share = static_cast<double>(d.n_requests - d.n_root_turns) / static_cast<double>(d.n_requests);
  d.median_input_tokens = median(in);
  d.p90_input_tokens = quantile(in, 0.9);
  d.median_output_tokens = median(out);
  d.median_root_turns = median(root_turns);
  if (!root_ctx.empty()) {
    d.median_root_context_tokens = median(root_ctx);
    d.root_over_256k = static_cast<double>(over) / static_cast<double>(root_ctx.size());
  }
  return d;
}

std::string depth_line(const TraceDepth& d) {
  return fmt::format(
      "depth: {} sessions, {} requests ({:.0f} % sub-agent), input median {:.0f}k / p90 {:.0f}k tokens, "
      "root context (in+out) median {:.0f}k, {:.0f} % of root turns > 256k, output median {:.0f}, "
      "{:.0f} root turns per session (median)",
      d.n_sessions, d.n_requests, 100 * d.subagent_share, d.median_input_tokens / 1e3,
      d.p90_input_tokens / 1e3, d.median_root_context_tokens / 1e3, 100 * d.root_over_256k,
      d.median_output_tokens, d.median_root_turns);
}

}  // namespace ds
