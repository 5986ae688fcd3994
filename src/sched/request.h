// Request: one generation request as counters, not phases. A prefill chunk is "schedule fewer
// tokens than remain"; a prefix hit is "start with n_computed_tokens > 0"; decode is "one token
// left to compute". Invariant: 0 <= n_computed_tokens <= n_tokens() and n_tokens() grows by one per
// sampled token; the scheduler is the only writer.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/sampling_params.h"

namespace ds {

using RequestId = int64_t;

enum class RequestStatus : uint8_t {
  Waiting,    // queued; not holding cache memory
  Running,    // admitted: holds a cache sequence (live state + pages)
  Preempted,  // evicted from running under memory pressure; back in the queue, will recompute
  Finished,   // produced max_output_tokens or a stop token; cache sequence handed to finish()
  Aborted,    // cancelled by the caller (or rejected: prompt can never fit)
};

const char* to_string(RequestStatus status);

struct Request {
  RequestId id = 0;
  std::vector<int32_t> tokens;    // prompt ids, then each sampled id appended [n_tokens()]
  int64_t n_prompt_tokens = 0;    // prefix of `tokens` that came from the caller
  int64_t max_output_tokens = 1;  // stop after this many sampled tokens (>= 1)
  SamplingParams sampling;        // greedy unless set; stop ids end the request early
  int64_t n_computed_tokens = 0;  // tokens whose KV/state exist (cache hit + computed chunks)
  int64_t n_output_tokens = 0;    // tokens sampled so far
  RequestStatus status = RequestStatus::Waiting;
  bool stopped = false;  // the last sampled token is one of sampling.stop_token_ids

  // Filled at (each) admission from the cache's match; reports, not control flow.
  int64_t n_hit_tokens = 0;       // restorable prefix (KV + KDA checkpoint) at admission
  int64_t n_kv_hit_tokens = 0;    // KV-reachable prefix at admission (>= n_hit_tokens)
  int64_t n_host_hit_tokens = 0;  // part of n_hit_tokens that came from a lower tier
  int n_preemptions = 0;          // times this request was preempted (recompute)

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_remaining_prompt_tokens() const { return n_prompt_tokens - n_computed_tokens; }
  bool prompt_done() const { return n_computed_tokens >= n_prompt_tokens; }
  bool done() const { return stopped || n_output_tokens >= max_output_tokens; }
};

}  // namespace ds
