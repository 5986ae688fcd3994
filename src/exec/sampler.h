// Sampler: one token from one row of logits under a request's SamplingParams. Greedy = argmax
// (lowest id on ties). Otherwise softmax(logits / temperature), then top-k, top-p (smallest set of
// the most likely tokens whose probability reaches top_p), min-p (drop tokens below min_p times the
// most likely one), renormalise, and draw with u = a pure function of (seed, position): a request's
// output depends only on its own logits, never on batch order. Non-finite logits are an error.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "exec/executor.h"
#include "sched/sampling_params.h"

namespace ds {

// The seed a request samples with: params.seed, or one derived from the request id.
uint64_t sampling_seed(const SamplingParams& params, int64_t request_id);

// logits f32 [vocab]; position = index of the token being sampled in the sequence. Throws
// ds::Error (naming `what`) on a NaN/inf logit.
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t seed,
                     int64_t position, const char* what = "logits");

// Whether a request's token is exactly the argmax of its logits (lowest id on ties) and nothing else
// of the row is needed: greedy or top-k 1, no log-probabilities. An executor may then compute that
// argmax where the logits are (the device) and hand sample_plan the token instead of the row; it
// skips the host's non-finite check of the row (NaN is never the argmax).
bool samples_by_argmax(const SamplingParams& params);

// Log-softmax of `logits` at `token`, and the k most likely ids (best first, lowest id on ties).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int k);

// One step's sampling, shared by the model executors: for every plan entry with samples == true,
// its logits row (logits[i] for plan.seqs[i], f32 [vocab]) gives the token appended to
// result.sampled_tokens and, where the request asked, its log-probabilities. Rows are appended to
// (*kept)[request] when kept is not null. `who` names the executor in errors. argmax, when not
// empty, has one entry per plan entry: argmax[i] >= 0 is the argmax of entry i's row computed by the
// executor (its logits row is then empty; only for samples_by_argmax requests, kept must be null).
void sample_plan(const SchedulePlan& plan, std::span<const std::vector<float>> logits, int64_t vocab,
                 StepResult& result, std::unordered_map<RequestId, std::vector<float>>* kept, const char* who,
                 std::span<const int32_t> argmax = {});

}  // namespace ds
