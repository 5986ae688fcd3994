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

struct StepResult {
  std::vector<int32_t> sampled_tokens;  // one per plan entry with samples == true, in plan order
  double duration_s = 0;                // time the step took (virtual for the simulator)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StepResult execute(const SchedulePlan& plan) = 0;
};

}  // namespace ds
