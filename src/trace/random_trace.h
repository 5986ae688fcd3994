// Fixed-length random workload, as `sglang.bench_serving` / `vllm bench serve` build it with
// `--dataset-name random`: n independent single-turn requests of `input` prompt tokens and
// `output` decoded tokens (ignore_eos), random token ids so no two requests share a prefix.
// Lengths are uniform in [range * len, len] (`--random-range-ratio`; 1 = fixed). Replayed closed
// loop at a fixed concurrency with every lane starting at t = 0 and no warm-up (the cookbook
// sweeps: cache-cold, num_prompts = 5 x concurrency).
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace ds {

struct RandomTraceParams {
  int64_t input = 8192;   // prompt tokens per request
  int64_t output = 1024;  // decoded tokens per request
  int64_t n = 16;         // number of requests
  double range = 1.0;     // lengths uniform in [range * len, len]
  uint64_t seed = 1;
  int block = 64;  // tokens per hash-id block
};

// Parses "input=8192,output=1024,n=80[,range=1,seed=1,block=64]"; throws ds::Error naming a bad key.
RandomTraceParams parse_random_params(const std::string& kv);

// The trace: n one-turn sessions, closed loop, think time 0, `fixed_length` set.
Trace generate_random_trace(const RandomTraceParams& params);

}  // namespace ds
