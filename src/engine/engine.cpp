#include "engine/engine.h"

#include "core/check.h"

namespace ds {

Engine::Engine(const EngineConfig& config, Executor& executor, Clock& clock)
    : cache_(config.cache),
      sched_(config.scheduler, cache_),
      exec_(executor),
      clock_(clock),
      check_invariants_(config.check_invariants) {}

void Engine::add(Request request) {
  sched_.add(std::move(request));
}

bool Engine::abort(RequestId id) {
  auto req = sched_.abort(id);
  if (!req) return false;
  aborted_.push_back(std::move(*req));
  return true;
}

bool Engine::idle() const {
  return sched_.idle() && aborted_.empty();
}

EngineEvents Engine::step() {
  EngineEvents ev;
  ev.aborted = std::move(aborted_);
  aborted_.clear();
  if (!sched_.idle()) {
    SchedulePlan plan = sched_.step();
    StepResult result;
    // Transfers decided for an admission that did not run (e.g. promoted pages of a rejected
    // request) still describe where the cache now keeps data: the executor performs them.
    if (!plan.seqs.empty() || !plan.transfers.empty()) result = exec_.execute(plan);
    ev.executed = !plan.seqs.empty();
    if (ev.executed) {
      ev.step_s = result.duration_s;
      ev.n_scheduled_tokens = plan.n_scheduled_tokens;
      clock_.step_done(result.duration_s);
      ++n_steps_;
    }
    ev.admitted = plan.admitted;
    StepEvents se = sched_.apply(plan, result.sampled_tokens);
    ev.tokens = std::move(se.tokens);
    ev.logprobs = std::move(result.logprobs);
    ev.first_token = std::move(se.first_token);
    ev.finished = std::move(se.finished);
    ev.rejected = std::move(se.rejected);
    if (check_invariants_) cache_.check_invariants();
  }
  ev.now_s = clock_.now_s();
  return ev;
}

}  // namespace ds
