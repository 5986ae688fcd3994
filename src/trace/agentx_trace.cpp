#include "trace/agentx_trace.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/spec_params.h"
#include "trace/trace_rng.h"

namespace ds {
namespace {

constexpr double kZ90 = 1.2815515655446004;  // standard normal 90th percentile
constexpr double kOutputSigma = 1.0;
constexpr double kToolSigma = 1.0;
constexpr double kFirstUserSigma = 1.0;
constexpr double kEntryRequestsSigma = 0.8;
constexpr double kChainsSigma = 0.5;
constexpr double kEntryFirstSigma = 0.5;
constexpr int64_t kCompactedTokens = 4000;  // summary that replaces a compacted context

struct Chain {  // one chain of a sub-agent entry: its own growth after the entry's first prompt
  std::vector<int64_t> out;
  std::vector<double> tool, think;
  double offset_s = 0;
};
struct Entry {
  int32_t spawn_after = 0, join_before = -1;
  int64_t first = 0;
  std::vector<Chain> chains;
};
struct Shape {
  int64_t first = 0;
  std::vector<int64_t> out;
  std::vector<double> tool, think;
  std::vector<Entry> entries;
};

double median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? double(v[n / 2]) : 0.5 * double(v[n / 2 - 1] + v[n / 2]);
}

// Root prompt lengths for tool scale c (compacted past the context); `epoch` flags restarts.
std::vector<int64_t> root_inputs(const Shape& s, const AgentxTraceParams& p, double c,
                                 std::vector<bool>* epoch) {
  std::vector<int64_t> in(s.out.size());
  if (epoch) epoch->assign(in.size(), false);
  for (size_t k = 0; k < in.size(); ++k) {
    if (k == 0) {
      in[k] = s.first;
      continue;
    }
    in[k] = in[k - 1] + s.out[k - 1] + std::max<int64_t>(1, std::llround(c * s.tool[k]));
    if (in[k] + s.out[k] > p.context) {
      in[k] = std::min(p.context - s.out[k], p.system + kCompactedTokens);
      if (epoch) (*epoch)[k] = true;
    }
  }
  return in;
}

std::vector<int64_t> chain_inputs(const Entry& e, const Chain& ch, double c) {
  std::vector<int64_t> in(ch.out.size());
  for (size_t j = 0; j < in.size(); ++j)
    in[j] = j == 0 ? e.first : in[j - 1] + ch.out[j - 1] + std::max<int64_t>(1, std::llround(c * ch.tool[j]));
  return in;
}

double root_context_median(const std::vector<Shape>& shapes, const AgentxTraceParams& p, double c) {
  std::vector<int64_t> all;
  for (const Shape& s : shapes) {
    std::vector<int64_t> in = root_inputs(s, p, c, nullptr);
    for (size_t k = 0; k < in.size(); ++k) all.push_back(in[k] + s.out[k]);
  }
  return median_of(all);
}

double sub_input_median(const std::vector<Shape>& shapes, double c) {
  std::vector<int64_t> all;
  for (const Shape& s : shapes)
    for (const Entry& e : s.entries)
      for (const Chain& ch : e.chains) {
        std::vector<int64_t> in = chain_inputs(e, ch, c);
        all.insert(all.end(), in.begin(), in.end());
      }
  return median_of(all);
}

// Smallest scale in [0, hi] whose statistic reaches `target` (bisection; f nondecreasing in the scale
// up to compaction, which only ever lowers it).
template <class F>
double calibrate(F f, double target) {
  double hi = 1;
  while (f(hi) < target && hi < 1e9) hi *= 2;
  double lo = 0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < target ? lo : hi) = mid;
  }
  return hi;
}

int64_t draw_count(TraceRng& rng, double mean_value) {  // stochastic rounding of a non-negative mean
  const double fl = std::floor(mean_value);
  return int64_t(fl) + (rng.uniform() <= mean_value - fl ? 1 : 0);
}

std::vector<Shape> draw_shapes(const AgentxTraceParams& p, TraceRng& rng) {
  const double sigma_turns = std::sqrt(2.0 * std::log(std::max(p.turns_mean / p.turns, 1.0)));
  const double sigma_think = std::log(p.think_p90 / p.think) / kZ90;
  const double sigma_sub_think = std::log(p.sub_think_p90 / p.sub_think) / kZ90;
  // Requests per entry and chains per entry: lognormal with the given means.
  const double entry_median = p.entry_requests / std::exp(0.5 * kEntryRequestsSigma * kEntryRequestsSigma);
  const double chains_median = p.chains / std::exp(0.5 * kChainsSigma * kChainsSigma);
  std::vector<Shape> shapes(size_t(p.sessions));
  for (Shape& s : shapes) {
    const int64_t turns = std::max<int64_t>(4, std::llround(rng.lognormal(p.turns, sigma_turns)));
    s.first =
        p.system +
        std::max<int64_t>(64, std::llround(rng.lognormal(double(p.first_input - p.system), kFirstUserSigma)));
    for (int64_t k = 0; k < turns; ++k) {
      s.out.push_back(std::max<int64_t>(1, std::llround(rng.lognormal(double(p.output), kOutputSigma))));
      s.tool.push_back(k == 0 ? 0.0 : rng.lognormal(1.0, kToolSigma));
      s.think.push_back(k == 0 ? 0.0 : rng.lognormal(p.think, sigma_think));
    }
    // Entries so that sub-agent requests are `subagents` of all requests in expectation.
    const double sub_requests = p.subagents / (1.0 - p.subagents) * double(turns);
    const int64_t n_entries = draw_count(rng, sub_requests / p.entry_requests);
    for (int64_t e = 0; e < n_entries; ++e) {
      Entry en;
      en.spawn_after = int32_t(rng.uniform_int(0, turns - 1));
      en.join_before = en.spawn_after + 1 < turns ? en.spawn_after + 1 : -1;
      en.first = std::max<int64_t>(64, std::llround(rng.lognormal(double(p.sub_first), kEntryFirstSigma)));
      const int64_t n_req =
          std::max<int64_t>(1, std::llround(rng.lognormal(entry_median, kEntryRequestsSigma)));
      const int64_t n_chains =
          std::clamp<int64_t>(std::llround(rng.lognormal(chains_median, kChainsSigma)), 1, n_req);
      en.chains.resize(size_t(n_chains));
      for (int64_t j = 0; j < n_req; ++j) {
        Chain& ch = en.chains[size_t(j % n_chains)];
        ch.out.push_back(std::max<int64_t>(1, std::llround(rng.lognormal(double(p.output), kOutputSigma))));
        ch.tool.push_back(ch.tool.empty() ? 0.0 : rng.lognormal(1.0, kToolSigma));
        ch.think.push_back(ch.think.empty() ? 0.0 : rng.lognormal(p.sub_think, sigma_sub_think));
      }
      // Chains are dispatched at their own offsets after the spawn (assumption: within one
      // sub-agent think time), as AIPerf dispatches chain children at their recorded offsets.
      for (Chain& ch : en.chains) ch.offset_s = rng.uniform() * p.sub_think;
      s.entries.push_back(std::move(en));
    }
    std::sort(s.entries.begin(), s.entries.end(),
              [](const Entry& a, const Entry& b) { return a.spawn_after < b.spawn_after; });
  }
  return shapes;
}

// Block ids of a prompt of `n` tokens whose first `shared_tokens` (whole blocks only) come from
// namespace `shared_ns` and the rest from `own_ns`; `stream` caches the ids built so far.
void extend_stream(std::vector<uint64_t>& stream, int64_t n, int64_t shared_tokens, uint64_t shared_ns,
                   uint64_t own_ns, int block) {
  const size_t need = size_t((n + block - 1) / block);
  const int64_t shared_blocks = shared_tokens / block;
  for (size_t b = stream.size(); b < need; ++b)
    stream.push_back(int64_t(b) < shared_blocks ? namespaced_block_id(shared_ns, b)
                                                : namespaced_block_id(own_ns, b));
}

TraceTurn make_turn(const std::vector<uint64_t>& stream, int64_t in, int64_t out, double think, double at,
                    int block) {
  TraceTurn t;
  t.arrival_s = at;
  t.think_time_s = think;
  t.n_input_tokens = in;
  t.n_output_tokens = out;
  t.hash_ids.assign(stream.begin(), stream.begin() + (in + block - 1) / block);
  return t;
}

}  // namespace

AgentxTraceParams parse_agentx_params(const std::string& kv) {
  AgentxTraceParams p;
  SpecParams sp("synthetic:agentx trace", kv);
  constexpr int64_t kBig = int64_t{1} << 26;
  while (sp.next()) {
    const std::string_view k = sp.key();
    if (k == "sessions")
      p.sessions = sp.integer(1, 100000);
    else if (k == "turns")
      p.turns = sp.number(1, 1e5);
    else if (k == "turns_mean")
      p.turns_mean = sp.number(1, 1e5);
    else if (k == "root_context")
      p.root_context = sp.integer(1, kBig);
    else if (k == "first_input")
      p.first_input = sp.integer(1, kBig);
    else if (k == "system")
      p.system = sp.integer(0, kBig);
    else if (k == "output")
      p.output = sp.integer(1, kBig);
    else if (k == "subagents")
      p.subagents = sp.number(0, 0.95);
    else if (k == "entry_requests")
      p.entry_requests = sp.number(1, 1e5);
    else if (k == "chains")
      p.chains = sp.number(1, 1e3);
    else if (k == "sub_input")
      p.sub_input = sp.integer(1, kBig);
    else if (k == "sub_first")
      p.sub_first = sp.integer(1, kBig);
    else if (k == "think")
      p.think = sp.number(0.001, 1e6);
    else if (k == "think_p90")
      p.think_p90 = sp.number(0.001, 1e6);
    else if (k == "sub_think")
      p.sub_think = sp.number(0.001, 1e6);
    else if (k == "sub_think_p90")
      p.sub_think_p90 = sp.number(0.001, 1e6);
    else if (k == "context")
      p.context = sp.integer(2, kBig);
    else if (k == "seed")
      p.seed = uint64_t(sp.integer(0, INT64_MAX));
    else if (k == "block")
      p.block = int(sp.integer(1, 1 << 20));
    else
      sp.unknown(
          "sessions, turns, turns_mean, root_context, first_input, system, output, subagents, "
          "entry_requests, "
          "chains, sub_input, sub_first, think, think_p90, sub_think, sub_think_p90, context, seed, block");
  }
  DS_CHECK(p.turns_mean >= p.turns, "synthetic:agentx: turns_mean={} must be >= turns={}", p.turns_mean,
           p.turns);
  DS_CHECK(p.system < p.first_input && p.first_input < p.root_context && p.root_context < p.context,
           "synthetic:agentx: need system {} < first_input {} < root_context {} < context {}", p.system,
           p.first_input, p.root_context, p.context);
  DS_CHECK(p.sub_first < p.sub_input, "synthetic:agentx: sub_first={} must be below sub_input={}",
           p.sub_first, p.sub_input);
  DS_CHECK(p.think_p90 > p.think && p.sub_think_p90 > p.sub_think,
           "synthetic:agentx: a p90 think time must exceed its median");
  return p;
}

Trace generate_agentx_trace(const AgentxTraceParams& p) {
  TraceRng rng(p.seed * 0x5851f42d4c957f2dULL + 0x61676e74ULL);
  std::vector<Shape> shapes = draw_shapes(p, rng);
  const double c_root =
      calibrate([&](double c) { return root_context_median(shapes, p, c); }, double(p.root_context));
  const double c_sub = calibrate([&](double c) { return sub_input_median(shapes, c); }, double(p.sub_input));

  Trace trace;
  trace.source = fmt::format(
      "synthetic:agentx,sessions={},turns={},turns_mean={},root_context={},first_input={},system={},output={}"
      ","
      "subagents={},entry_requests={},chains={},sub_input={},sub_first={},think={},think_p90={},sub_think={},"
      "sub_think_p90={},context={},seed={},block={}",
      p.sessions, p.turns, p.turns_mean, p.root_context, p.first_input, p.system, p.output, p.subagents,
      p.entry_requests, p.chains, p.sub_input, p.sub_first, p.think, p.think_p90, p.sub_think,
      p.sub_think_p90, p.context, p.seed, p.block);
  trace.block_tokens = p.block;
  trace.closed_loop = true;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    TraceSession session{fmt::format("agentx-{}", i), {}, {}};
    const std::string base = fmt::format("agentx/{}/{}", p.seed, i);
    std::vector<bool> epoch;
    const std::vector<int64_t> in = root_inputs(s, p, c_root, &epoch);
    std::vector<uint64_t> stream;
    uint64_t ns = 0;
    const uint64_t system_ns = name_namespace(base + "/system");  // kept across compactions
    double t = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      if (k == 0 || epoch[k]) {
        ns = name_namespace(fmt::format("{}/root/{}", base, k));
        stream.clear();
      }
      extend_stream(stream, in[k], p.system, system_ns, ns, p.block);
      t += s.think[k];
      session.turns.push_back(make_turn(stream, in[k], s.out[k], s.think[k], t, p.block));
    }
    for (size_t e = 0; e < s.entries.size(); ++e) {
      const Entry& en = s.entries[e];
      const uint64_t entry_ns = name_namespace(fmt::format("{}/entry/{}", base, e));
      for (size_t c = 0; c < en.chains.size(); ++c) {
        const Chain& ch = en.chains[c];
        const uint64_t chain_ns = name_namespace(fmt::format("{}/entry/{}/chain/{}", base, e, c));
        TraceBranch b;
        b.spawn_after = en.spawn_after;
        b.join_before = en.join_before;
        b.start_offset_s = ch.offset_s;
        const std::vector<int64_t> cin = chain_inputs(en, ch, c_sub);
        std::vector<uint64_t> cs;
        double tc = session.turns[size_t(en.spawn_after)].arrival_s + ch.offset_s;
        for (size_t j = 0; j < cin.size(); ++j) {
          extend_stream(cs, cin[j], en.first, entry_ns, chain_ns, p.block);
          tc += ch.think[j];
          b.turns.push_back(make_turn(cs, cin[j], ch.out[j], ch.think[j], tc, p.block));
        }
        session.branches.push_back(std::move(b));
      }
    }
    trace.sessions.push_back(std::move(session));
  }
  return trace;
}

}  // namespace ds
