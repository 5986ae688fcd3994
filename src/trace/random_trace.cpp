#include "trace/random_trace.h"

#include <algorithm>

#include "core/check.h"
#include "trace/block_hash.h"
#include "trace/spec_params.h"
#include "trace/trace_rng.h"

namespace ds {

RandomTraceParams parse_random_params(const std::string& kv) {
  RandomTraceParams p;
  SpecParams sp("random trace", kv);
  constexpr int64_t kBig = int64_t{1} << 26;
  while (sp.next()) {
    std::string_view k = sp.key();
    if (k == "input")
      p.input = sp.integer(1, kBig);
    else if (k == "output")
      p.output = sp.integer(1, kBig);
    else if (k == "n")
      p.n = sp.integer(1, 10'000'000);
    else if (k == "range")
      p.range = sp.number(0, 1);
    else if (k == "seed")
      p.seed = static_cast<uint64_t>(sp.integer(0, INT64_MAX));
    else if (k == "block")
      p.block = static_cast<int>(sp.integer(1, 1 << 20));
    else
      sp.unknown("input, output, n, range, seed, block");
  }
  return p;
}

Trace generate_random_trace(const RandomTraceParams& p) {
  DS_CHECK(p.input >= 1 && p.output >= 1 && p.n >= 1 && p.range >= 0 && p.range <= 1 && p.block >= 1,
           "random trace: bad params input={} output={} n={} range={} block={}", p.input, p.output, p.n,
           p.range, p.block);
  TraceRng rng(p.seed * 0x9e3779b97f4a7c15ULL + 0x72616e64ULL);
  auto draw = [&](int64_t len) {
    const int64_t lo = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(len) * p.range));
    return lo >= len ? len : rng.uniform_int(lo, len);
  };
  Trace trace;
  trace.source = fmt::format("random:input={},output={},n={},range={},seed={},block={}", p.input, p.output,
                             p.n, p.range, p.seed, p.block);
  trace.block_tokens = p.block;
  trace.closed_loop = true;
  trace.fixed_length = true;
  const uint64_t ns = name_namespace(trace.source);
  uint64_t next_block = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    TraceTurn turn;
    turn.n_input_tokens = draw(p.input);
    turn.n_output_tokens = draw(p.output);
    const int64_t blocks = (turn.n_input_tokens + p.block - 1) / p.block;
    for (int64_t b = 0; b < blocks; ++b) turn.hash_ids.push_back(namespaced_block_id(ns, next_block++));
    trace.sessions.push_back(TraceSession{fmt::format("random-{}", i), {std::move(turn)}, {}});
  }
  return trace;
}

}  // namespace ds
