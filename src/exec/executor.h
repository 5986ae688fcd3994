// Executor: runs one engine step described by a SchedulePlan and reports what it produced and
// what it cost. Two implementations share this interface: the model runner (real forward, wall
// clock) and SimExecutor (cost model + virtual clock). The engine/replay loop owns the clock
// reading; executors never mutate the plan or the scheduler.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/cost_model.h"
#include "sched/schedule_plan.h"

namespace ds {

struct StepResult {
  std::vector<int32_t> sampled_tokens;  // one per plan entry with samples == true, in plan order
  double duration_s = 0;                // time the step took (virtual for the simulator)
  StepCost cost;                        // roofline breakdown (simulator) or measured split
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StepResult execute(const SchedulePlan& plan) = 0;
};

}  // namespace ds
