// SamplingParams: how one request turns logits into its next token, as plain data carried by the
// Request and read by the executor. Greedy (temperature 0) unless a temperature is set. The
// filters apply in this order to the temperature-scaled distribution: top-k, top-p, min-p; the
// draw is a pure function of (seed, token position), so a request's output does not depend on
// what else is batched with it. Stop tokens end the request after they are sampled (they are part
// of its output).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ds {

inline constexpr int32_t kMaxLogprobs = 20;  // most alternatives a request can ask for

struct SamplingParams {
  float temperature = 0.0f;             // 0 = greedy (argmax, lowest id on ties); else > 0
  int32_t top_k = 0;                    // keep the k most likely tokens (0 = all)
  float top_p = 1.0f;                   // keep the smallest set with probability >= top_p, (0, 1]
  float min_p = 0.0f;                   // drop tokens below min_p x the top probability, [0, 1]
  std::optional<uint64_t> seed;         // unset: derived from the request id
  std::vector<int32_t> stop_token_ids;  // finish after sampling any of these
  int32_t logprobs = -1;                // >= 0: report each sampled token's log-probability under
                                        // the model (raw logits) and the `logprobs` most likely ids
  // Scripted output for the simulated executor (replay --live-output): the token at sequence
  // position p is forced_tokens[p - forced_from] while that index is in range. Model executors
  // ignore it and sample as usual.
  std::vector<int32_t> forced_tokens;
  int64_t forced_from = 0;

  bool greedy() const { return temperature == 0.0f; }
  bool is_stop(int32_t token) const;
  // ds::Error naming the field on a value outside its range.
  void validate() const;
};

}  // namespace ds
