// Replay against an OpenAI-compatible HTTP endpoint (deltaserve serve, vLLM, SGLang): the same
// workload as the in-process replay (ReplayWorkload: same requests, same order for a seed, closed
// or open loop) on a wall clock, each request a streamed POST /v1/completions with
// max_tokens = the recorded output and ignore_eos. Prompts are token-id lists built from the
// trace's hash ids (as vLLM accepts), or deterministic text per hash block for servers that take
// text only. Measures TTFT (first streamed token), TPOT, throughput, and the realized hit rate
// from usage.prompt_tokens_details.cached_tokens. Failed requests are counted, never fatal.
#pragma once

#include <string>

#include "replay/replay.h"
#include "replay/run_metrics.h"
#include "trace/trace.h"

namespace ds {

struct EndpointConfig {
  std::string url;            // "http://host:port" (no path)
  std::string model;          // "" = the first id of GET /v1/models
  bool text_prompts = false;  // deterministic text per hash block instead of token ids
  double request_timeout_s = 600;
};

// The server's model card (GET /v1/models, first entry): id, and the nonstandard
// "vocab_size" / "max_model_len" deltaserve adds (0 when absent). Throws ds::Error when the
// endpoint does not answer.
struct EndpointModel {
  std::string id;
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;
};
EndpointModel query_endpoint_model(const EndpointConfig& endpoint);

// Runs `trace` against the endpoint once. config.cache / scheduler / executor are not used
// (the server has its own); config.vocab_size > 0 reduces token ids modulo it.
RunMetrics run_endpoint_replay(const Trace& trace, const ReplayConfig& config,
                               const EndpointConfig& endpoint);

// The deterministic text of one hash block in text mode: about `block_tokens` words, ending with
// ".\n" so that no BPE piece crosses a block boundary.
std::string block_text(uint64_t block_id, int block_tokens);

}  // namespace ds
