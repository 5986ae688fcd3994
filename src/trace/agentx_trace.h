// synthetic:agentx — a seeded workload fitted to the published statistics of the InferenceX AgentX
// corpus (semianalysisai/cc-traces-weka-062126 and its predecessors), with sub-agents as parallel
// branches (TraceBranch). The bundled 46-session Claude Code sample is far shallower than that
// corpus; this generator reproduces the depth the harness replays. Targets and their sources:
//  - root turns per session: median 65 (SemiAnalysis K3 primer, 2026-08-03: "median 65 turns per
//    session"), mean 145 (AIPerf semianalysis-agentx-faq.md: ~57k top-level turns in 393 traces);
//  - root context: half the top-level turns exceed 256k input+output tokens (AIPerf FAQ: the 256k
//    variant drops top-level turns from ~57k to ~28k) -> median root input+output = 256k;
//  - sub-agent share: ~42 % of requests (AIPerf FAQ: ~99k requests, ~57k top-level);
//  - 26 requests per sub-agent entry (InferenceX#1632: 27,504 inner requests in 1,053 groups) and
//    ~5 parallel chains per entry (AIPerf agentx-mvp.md: 615 entries -> ~3.1k chain children);
//  - output median 444 tokens per turn (SemiAnalysis K3 primer);
//  - first root prompt median 24,454 tokens of which 15,034 system + tool definitions, root think
//    time median 10 s / p90 170 s, sub-agent request input median 45,136 tokens (first 10,335),
//    sub-agent think median 4 s / p90 29 s: measured here on the 710 kv-cache-tester sessions.
// Not fitted, a check: the pooled median input over all requests (SemiAnalysis: 142k).
// Sessions share no blocks with each other (AgentX: local hash-id scope per trace); the chains of
// one sub-agent entry share the entry's first prompt. Same params => same trace on every platform.
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace ds {

struct AgentxTraceParams {
  int64_t sessions = 48;
  double turns = 65;                   // median root turns per session (lognormal)
  double turns_mean = 145;             // mean root turns per session (sets the lognormal's sigma)
  int64_t root_context = 256000;       // median root-turn input + output (calibrated exactly)
  int64_t first_input = 24454;         // median first root prompt
  int64_t system = 15034;              // system prompt + tool definitions at the start of every root prompt
  int64_t output = 444;                // median output tokens per request (lognormal, sigma 1)
  double subagents = 0.42;             // share of requests in sub-agent branches
  double entry_requests = 26;          // mean requests per sub-agent entry
  double chains = 5;                   // mean parallel chains per sub-agent entry
  int64_t sub_input = 45136;           // median sub-agent request input (calibrated exactly)
  int64_t sub_first = 10335;           // median first prompt of a sub-agent entry (shared by its chains)
  double think = 10, think_p90 = 170;  // root think time before a turn, s (lognormal)
  double sub_think = 4, sub_think_p90 = 29;  // sub-agent think time, s (lognormal)
  int64_t context = 1000000;  // a longer root prompt is compacted (restarts after the system prompt)
  uint64_t seed = 1;
  int block = 64;
};

// Parses "k=v,..." (keys = the field names above); "" gives the defaults. ds::Error names a bad key.
AgentxTraceParams parse_agentx_params(const std::string& kv);

Trace generate_agentx_trace(const AgentxTraceParams& params);

}  // namespace ds
