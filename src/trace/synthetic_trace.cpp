#include "trace/synthetic_trace.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/spec_params.h"
#include "trace/trace_rng.h"

namespace ds {
namespace {

constexpr double kTurnsSigma = 0.5;
constexpr double kOutputSigma = 1.0;
constexpr double kToolSigma = 1.0;
constexpr double kThinkSigma = 1.5;
constexpr double kFirstUserTokens = 2000;   // median first user message (lognormal, sigma 1.0)
constexpr int64_t kCompactedTokens = 4000;  // summary that replaces a compacted context

// Per-session shape before the tool-token scale is calibrated.
struct SessionShape {
  std::vector<int64_t> out;     // output tokens per turn
  std::vector<double> tool;     // unit-median tool tokens appended before each turn (0 for turn 0)
  std::vector<double> think_s;  // think time before each turn (0 for turn 0)
  int64_t first_user = 0;       // first user message tokens
};

// Prompt lengths of a session for tool scale `c`: in_0 = system + first_user,
// in_k = in_{k-1} + out_{k-1} + c * tool_k, compacted to system + kCompactedTokens past `context`.
// `epoch_start[k]` is true where a compaction restarted the content.
std::vector<int64_t> prompt_lengths(const SessionShape& s, const SyntheticTraceParams& p, double c,
                                    int64_t context, std::vector<bool>* epoch_start) {
  std::vector<int64_t> in(s.out.size());
  if (epoch_start) epoch_start->assign(s.out.size(), false);
  for (size_t k = 0; k < in.size(); ++k) {
    if (k == 0) {
      in[k] = p.system + s.first_user;
      continue;
    }
    in[k] = in[k - 1] + s.out[k - 1] + std::max<int64_t>(1, std::llround(c * s.tool[k]));
    if (in[k] > context) {
      in[k] = std::min(context, p.system + kCompactedTokens);
      if (epoch_start) (*epoch_start)[k] = true;
    }
  }
  return in;
}

// Median prompt length over all turns (mean of the two middle values for an even count, as in
// summarize()), with prompts compacted past `context`.
double pooled_median(const std::vector<SessionShape>& shapes, const SyntheticTraceParams& p, double c,
                     int64_t context) {
  std::vector<int64_t> all;
  for (const SessionShape& s : shapes) {
    std::vector<int64_t> in = prompt_lengths(s, p, c, context, nullptr);
    all.insert(all.end(), in.begin(), in.end());
  }
  std::sort(all.begin(), all.end());
  size_t n = all.size();
  return n % 2 ? static_cast<double>(all[n / 2]) : 0.5 * static_cast<double>(all[n / 2 - 1] + all[n / 2]);
}

// Bisection for a scale in [lo, hi] where the median crosses params.input (median(lo) below it,
// median(hi) at or above it).
double bisect_scale(const std::vector<SessionShape>& shapes, const SyntheticTraceParams& p, double lo,
                    double hi, int64_t context) {
  for (int i = 0; i < 60; ++i) {
    double mid = 0.5 * (lo + hi);
    (pooled_median(shapes, p, mid, context) < static_cast<double>(p.input) ? lo : hi) = mid;
  }
  return hi;
}

// Tool-token scale whose pooled median prompt length is params.input. Without compaction the
// median grows monotonically with the scale; compaction only lowers prompts, so from that scale
// search upwards (up to 8x) for a crossing with compaction, else keep it (the median then falls
// short: the context cannot hold such prompts often enough).
double calibrate_tool_scale(const std::vector<SessionShape>& shapes, const SyntheticTraceParams& p) {
  const double target = static_cast<double>(p.input);
  double hi = 1;
  while (pooled_median(shapes, p, hi, INT64_MAX) < target && hi < 1e9) hi *= 2;
  double c0 = bisect_scale(shapes, p, 0, hi, INT64_MAX);
  if (pooled_median(shapes, p, c0, p.context) >= target) return c0;
  for (double c = c0 * 1.25; c <= c0 * 8; c *= 1.25)
    if (pooled_median(shapes, p, c, p.context) >= target)
      return bisect_scale(shapes, p, c / 1.25, c, p.context);
  return c0;
}

// Shifts `z` so that its median is 0.
void center_on_median(std::vector<double>& z) {
  std::vector<double> sorted = z;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double med = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  for (double& x : z) x -= med;
}

}  // namespace

SyntheticTraceParams parse_synthetic_params(const std::string& kv) {
  SyntheticTraceParams p;
  SpecParams sp("synthetic trace", kv);
  constexpr int64_t kBig = int64_t{1} << 26;
  while (sp.next()) {
    std::string_view k = sp.key();
    if (k == "sessions")
      p.sessions = sp.integer(1, 100000);
    else if (k == "turns")
      p.turns = sp.integer(1, 100000);
    else if (k == "input")
      p.input = sp.integer(1, kBig);
    else if (k == "output")
      p.output = sp.integer(1, kBig);
    else if (k == "system")
      p.system = sp.integer(0, kBig);
    else if (k == "think")
      p.think = sp.number(0, 1e6);
    else if (k == "context")
      p.context = sp.integer(2, kBig);
    else if (k == "seed")
      p.seed = static_cast<uint64_t>(sp.integer(0, INT64_MAX));
    else if (k == "block")
      p.block = static_cast<int>(sp.integer(1, 1 << 20));
    else
      sp.unknown("sessions, turns, input, output, system, think, context, seed, block");
  }
  DS_CHECK(p.system < p.context, "synthetic trace: system={} must be below context={}", p.system, p.context);
  DS_CHECK(p.input > p.system, "synthetic trace: input={} must exceed system={}", p.input, p.system);
  DS_CHECK(p.input < p.context, "synthetic trace: input={} must be below context={}", p.input, p.context);
  return p;
}

Trace generate_synthetic_trace(const SyntheticTraceParams& p) {
  DS_CHECK(p.sessions >= 1 && p.turns >= 1 && p.block >= 1 && p.system < p.context && p.input > p.system &&
               p.input < p.context,
           "synthetic trace: bad params sessions={} turns={} block={} system={} context={} input={}",
           p.sessions, p.turns, p.block, p.system, p.context, p.input);
  // Memory bound before any allocation: every turn stores its prompt's block ids.
  const double est_bytes =
      double(p.sessions) * double(p.turns) *
      (8.0 * double((p.input + p.block - 1) / p.block) + double(sizeof(TraceTurn)) + 32.0);
  if (est_bytes > double(kMaxSyntheticTraceBytes))
    fail(
        "synthetic trace: sessions={} x turns={} with ~{} block ids per prompt needs about {:.1f} GiB, more "
        "than the {} GiB limit; use fewer sessions or turns, or a larger block",
        p.sessions, p.turns, (p.input + p.block - 1) / p.block, est_bytes / double(int64_t{1} << 30),
        kMaxSyntheticTraceBytes >> 30);
  TraceRng rng(p.seed * 0x2545f4914f6cdd1dULL + 0x1234567ULL);
  // Turn counts and output lengths are lognormal around the requested medians; their normal
  // draws are centred on their own sample median so the medians hold exactly, not only on average.
  std::vector<double> z_turns(static_cast<size_t>(p.sessions));
  for (double& z : z_turns) z = rng.normal();
  center_on_median(z_turns);
  std::vector<SessionShape> shapes(static_cast<size_t>(p.sessions));
  std::vector<double> z_out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    SessionShape& s = shapes[i];
    int64_t n = std::llround(static_cast<double>(p.turns) * std::exp(kTurnsSigma * z_turns[i]));
    n = p.turns == 1 ? 1 : std::max<int64_t>(2, n);
    s.first_user = std::max<int64_t>(1, std::llround(rng.lognormal(kFirstUserTokens, 1.0)));
    for (int64_t k = 0; k < n; ++k) {
      z_out.push_back(rng.normal());
      s.tool.push_back(k == 0 ? 0.0 : rng.lognormal(1.0, kToolSigma));
      s.think_s.push_back(k == 0 ? 0.0 : rng.lognormal(p.think, kThinkSigma));
    }
  }
  center_on_median(z_out);
  size_t j = 0;
  for (SessionShape& s : shapes)
    for (size_t k = 0; k < s.tool.size(); ++k)
      s.out.push_back(std::max<int64_t>(
          1, std::llround(static_cast<double>(p.output) * std::exp(kOutputSigma * z_out[j++]))));
  double scale = calibrate_tool_scale(shapes, p);

  Trace trace;
  trace.source = fmt::format(
      "synthetic:sessions={},turns={},input={},output={},system={},think={},context={},seed={},block={}",
      p.sessions, p.turns, p.input, p.output, p.system, p.think, p.context, p.seed, p.block);
  trace.block_tokens = p.block;
  trace.closed_loop = true;
  const uint64_t system_ns = name_namespace("synthetic/system");
  const int64_t system_blocks = p.system / p.block;  // whole blocks only are shared
  for (size_t i = 0; i < shapes.size(); ++i) {
    const SessionShape& s = shapes[i];
    std::vector<bool> epoch_start;
    std::vector<int64_t> in = prompt_lengths(s, p, scale, p.context, &epoch_start);
    TraceSession session{fmt::format("synthetic-{}", i), {}, {}};
    uint64_t ns = 0;
    double t = 0;
    std::vector<uint64_t> stream;  // block ids of the session's token stream so far
    for (size_t k = 0; k < in.size(); ++k) {
      if (k == 0 || epoch_start[k]) {
        ns = name_namespace(fmt::format("synthetic/{}/{}/{}", p.seed, i, k));
        stream.clear();
      }
      size_t need = static_cast<size_t>((in[k] + p.block - 1) / p.block);
      for (size_t b = stream.size(); b < need; ++b)
        stream.push_back(static_cast<int64_t>(b) < system_blocks ? namespaced_block_id(system_ns, b)
                                                                 : namespaced_block_id(ns, b));
      t += s.think_s[k];
      TraceTurn turn;
      turn.arrival_s = t;
      turn.think_time_s = s.think_s[k];
      turn.n_input_tokens = in[k];
      turn.n_output_tokens = s.out[k];
      turn.hash_ids.assign(stream.begin(), stream.begin() + static_cast<ptrdiff_t>(need));
      session.turns.push_back(std::move(turn));
    }
    trace.sessions.push_back(std::move(session));
  }
  return trace;
}

}  // namespace ds
