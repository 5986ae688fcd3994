#include "exec/sim_executor.h"

#include "core/check.h"
#include "core/hash.h"

namespace ds {

SimExecutor::SimExecutor(const CostModel& cost_model, const SimExecutorConfig& config)
    : cost_model_(cost_model), config_(config) {}

int32_t SimExecutor::fake_token(RequestId request, int64_t position) const {
  uint64_t h = splitmix64(config_.seed ^ splitmix64(static_cast<uint64_t>(request) * 0x100000001b3ULL +
                                                    static_cast<uint64_t>(position)));
  return static_cast<int32_t>(h & 0x7fffffff);
}

StepResult SimExecutor::execute(const SchedulePlan& plan) {
  StepResult result;
  last_ = StepCost{};
  work_.seqs.resize(plan.seqs.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& s = plan.seqs[i];
    SeqWork& w = work_.seqs[i];
    w.n_new_tokens = s.n_tokens();
    w.n_context_tokens = s.begin;
    w.n_checkpoints = static_cast<int64_t>(s.checkpoints.size());
    w.n_restores = s.restore_from.valid() ? 1 : 0;
    w.host_load_bytes = s.host_load_bytes;
    if (s.samples) {
      int32_t token = fake_token(s.request_id, s.end);
      if (s.sampling != nullptr) {  // scripted output (replay --live-output)
        const int64_t i = s.end - s.sampling->forced_from;
        if (i >= 0 && i < static_cast<int64_t>(s.sampling->forced_tokens.size()))
          token = s.sampling->forced_tokens[static_cast<size_t>(i)];
      }
      result.sampled_tokens.push_back(token);
    }
  }
  if (!plan.seqs.empty()) {
    last_ = cost_model_.step(work_);
    result.duration_s = last_.total_s;
    DS_CHECK(result.duration_s >= 0, "sim executor: negative step time {} s", result.duration_s);
  }
  accumulate(total_, last_);
  ++n_steps_;
  return result;
}

}  // namespace ds
