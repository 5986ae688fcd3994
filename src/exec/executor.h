// Executor: runs one engine step described by a SchedulePlan (the contract is documented in
// sched/schedule_plan.h) and reports the sampled tokens and how long the step took. Two
// implementations share this interface: ModelExecutor (real forward over its own page and slot
// buffers; measured wall time) and SimExecutor (cost model; virtual time, fake tokens). The Engine
// owns the clock; executors never mutate the plan, the scheduler or the cache.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/schedule_plan.h"

namespace ds {

// A sampled token's log-probability under the model's distribution (log-softmax of the raw
// logits, before temperature and filters) and the k most likely ids, best first.
struct TokenLogprobs {
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

struct StepResult {
  std::vector<int32_t> sampled_tokens;  // one per plan entry with samples == true, in plan order
  // Empty when no request of the step asked (SamplingParams::logprobs < 0 for all); otherwise one
  // entry per sampled token, default-constructed for requests that did not ask.
  std::vector<TokenLogprobs> logprobs;
  double duration_s = 0;  // time the step took (virtual for the simulator)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StepResult execute(const SchedulePlan& plan) = 0;
};

}  // namespace ds
