// RequestBatch: a batch of token-id requests run through an Engine — the data of
// `deltaserve generate --requests IN.jsonl --out OUT.jsonl` and its driver.
// Input, one JSON object per line (blank lines skipped):
//   {"id": str, "tokens": [int], "max_tokens": int,            required (max_tokens >= 1)
//    "after": str,                                             start once that request finished
//    "extends": bool,                                          with after: the prompt is that
//                                                              request's prompt + output + tokens
//    "temperature", "top_k", "top_p", "min_p", "seed", "stop_token_ids"}   sampling (greedy default)
// Output, one line per request in input order:
//   {"id", "output_tokens": [int], "cached_tokens": int, "prompt_tokens": int, "finish_reason":
//    "length" | "stop" | "rejected"}
// Bad input gets a one-line ds::Error naming the source, line and field; nothing runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace ds {

struct BatchRequest {
  std::string id;
  std::vector<int32_t> tokens;
  int64_t max_tokens = 16;
  std::string after;     // "" = start at once
  bool extends = false;  // prompt = after's prompt + output + tokens
  SamplingParams sampling;
};

struct BatchResult {
  std::string id;
  std::vector<int32_t> output_tokens;
  int64_t cached_tokens = 0;  // prompt tokens restored from the prefix cache at admission
  int64_t prompt_tokens = 0;
  std::string finish_reason;  // "length", "stop" or "rejected" (cannot fit in the cache)
};

// Parses and validates the whole input: ids unique, `after` names an earlier line, token ids in
// [0, vocab_size), sampling values in range, no unknown keys.
std::vector<BatchRequest> parse_batch_requests(std::string_view text, const std::string& source,
                                               int64_t vocab_size);

// Runs the batch to completion on `engine` (which must be idle); results in input order.
std::vector<BatchResult> run_batch(Engine& engine, const std::vector<BatchRequest>& requests);

// The output lines (JSONL, newline-terminated).
std::string format_batch_results(const std::vector<BatchResult>& results);

}  // namespace ds
