// SimExecutor: the simulated executor — charges each SchedulePlan the CostModel's roofline time
// (the step's duration, which the engine adds to its virtual clock) and returns fake sampled
// tokens; no weights, no GPU. Deterministic: the same plans give the same times and tokens for a
// seed. Lower-tier (host) hits are charged through SeqWork::host_load_bytes, checkpoint
// writes/restores through n_checkpoints / n_restores. The roofline breakdown is this executor's
// own report (last_cost(), total_cost()), not part of StepResult.
#pragma once

#include <cstdint>

#include "exec/executor.h"
#include "plan/cost_model.h"

namespace ds {

struct SimExecutorConfig {
  uint64_t seed = 0;  // fake-token stream seed (the per-step host overhead is the cost model's)
};

class SimExecutor final : public Executor {
 public:
  // `cost_model` must outlive the executor (it is read-only and may be shared across threads).
  SimExecutor(const CostModel& cost_model, const SimExecutorConfig& config);

  StepResult execute(const SchedulePlan& plan) override;

  const StepCost& last_cost() const { return last_; }    // breakdown of the last execute()
  const StepCost& total_cost() const { return total_; }  // summed over all executed steps, every part
  int64_t n_steps() const { return n_steps_; }

  // Fake token for (request, position): a fixed mix of the seed, never depends on call order.
  int32_t fake_token(RequestId request, int64_t position) const;

 private:
  const CostModel& cost_model_;
  SimExecutorConfig config_;
  StepCost last_;
  StepCost total_;
  int64_t n_steps_ = 0;
  StepWork work_;  // reused per step (no allocation in steady state)
};

}  // namespace ds
