#include "sched/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace ds {

Scheduler::Scheduler(const SchedulerConfig& config, HybridCache& cache)
    : config_(config), cache_(cache), page_tokens_(cache.config().page_tokens) {
  DS_CHECK(config.max_step_tokens >= 1, "scheduler: max_step_tokens must be >= 1, got {}",
           config.max_step_tokens);
  DS_CHECK(config.max_running >= 1, "scheduler: max_running must be >= 1, got {}", config.max_running);
}

void Scheduler::add(Request request) {
  DS_CHECK(!request.tokens.empty(), "request {}: empty prompt", request.id);
  DS_CHECK(request.max_output_tokens >= 1, "request {}: max_output_tokens must be >= 1, got {}", request.id,
           request.max_output_tokens);
  request.sampling.validate();
  request.n_prompt_tokens = request.n_tokens();
  request.n_computed_tokens = 0;
  request.n_output_tokens = 0;
  request.stopped = false;
  request.status = RequestStatus::Waiting;
  cache_.announce(request.tokens);
  waiting_.push_back(std::make_unique<Request>(std::move(request)));
}

std::optional<Request> Scheduler::abort(RequestId id) {
  DS_CHECK(applied_step_ == step_index_, "scheduler: abort({}) between step() and apply()", id);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->id != id) continue;
    Request req = std::move(**it);
    waiting_.erase(it);
    req.status = RequestStatus::Aborted;
    return req;
  }
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if (it->req->id != id) continue;
    cache_.abort(it->seq);
    Request req = std::move(*it->req);
    running_.erase(it);
    req.status = RequestStatus::Aborted;
    return req;
  }
  return std::nullopt;
}

SchedulePlan Scheduler::step() {
  SchedulePlan plan;
  plan.step_index = ++step_index_;
  int64_t budget = config_.max_step_tokens;
  if (config_.mixed_batches) {
    schedule_running(plan, budget, Phase::all);
    admit_waiting(plan, budget);
  } else {
    schedule_running(plan, budget, Phase::prefill);
    admit_waiting(plan, budget);
    if (budget == config_.max_step_tokens) schedule_running(plan, budget, Phase::decode);
  }
  build_plan(plan);
  plan.preempted = std::move(pending_preempted_);
  pending_preempted_.clear();
  return plan;
}

// Running requests of `phase`, oldest first: one token for a decode, a budget-limited chunk for a
// prefill. Growth is reserved in the cache; on failure the newest running requests are preempted.
void Scheduler::schedule_running(SchedulePlan& plan, int64_t& budget, Phase phase) {
  for (auto& slot : running_) slot.n_new = 0;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Slot& slot = running_[i];
    const int64_t left = slot.req->n_tokens() - slot.req->n_computed_tokens;
    if ((phase == Phase::prefill && left <= 1) || (phase == Phase::decode && left > 1)) continue;
    int64_t n_new = std::min(left, budget);
    if (!preempt_if_needed(i, slot.req->n_computed_tokens + n_new)) {
      // Slot i is the newest left. Alone (everything else evictable) it can never fit: reject it
      // rather than recompute the same prefix forever; otherwise preempt it and stop.
      if (running_.size() == 1)
        reject_last_running();
      else
        preempt_last();
      break;
    }
    slot.n_new = n_new;
    budget -= n_new;
  }
}

// Reserves pages for running_[index] up to n_total tokens, preempting running requests newer than
// it while the cache has no room. Returns false when no newer request is left to preempt.
bool Scheduler::preempt_if_needed(size_t index, int64_t n_total) {
  while (!cache_.reserve(running_[index].seq, n_total)) {
    if (running_.size() - 1 <= index) return false;
    preempt_last();
  }
  return true;
}

// Releases the newest running request for recompute: its cache sequence is aborted (committed
// pages stay cached, so the re-admission usually hits them) and it goes back to the queue front.
void Scheduler::preempt_last() {
  Slot slot = std::move(running_.back());
  running_.pop_back();
  cache_.abort(slot.seq);
  Request& req = *slot.req;
  req.n_computed_tokens = 0;
  req.status = RequestStatus::Preempted;
  ++req.n_preemptions;
  ++n_preemptions_;
  pending_preempted_.push_back(req.id);
  waiting_.push_front(std::move(slot.req));
}

// Admits queued requests FCFS while the token budget and running slots last. A request that cannot
// get cache room waits (head of line); one that cannot fit even with nothing else running is
// rejected.
void Scheduler::admit_waiting(SchedulePlan& plan, int64_t& budget) {
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < config_.max_running) {
    Request& req = *waiting_.front();
    Slot slot;
    if (!admit_one(req, slot)) {
      if (running_.empty()) {
        reject_head();
        continue;
      }
      return;
    }
    int64_t n_new = std::min(req.n_tokens() - req.n_computed_tokens, budget);
    const int64_t reserve_to = config_.reserve_full_prompt ? req.n_tokens() : req.n_computed_tokens + n_new;
    if (!cache_.reserve(slot.seq, reserve_to)) {
      cache_.abort(slot.seq);
      req.n_computed_tokens = 0;
      if (running_.empty()) {
        reject_head();
        continue;
      }
      return;
    }
    slot.n_new = n_new;
    slot.just_admitted = true;
    slot.req = std::move(waiting_.front());
    waiting_.pop_front();
    slot.req->status = RequestStatus::Running;
    plan.admitted.push_back(slot.req->id);
    budget -= n_new;
    running_.push_back(std::move(slot));
  }
}

// Cache admission for all tokens so far (prompt, plus sampled tokens after a preemption). A hit
// covering every token is re-admitted one token shorter: the last token must be computed to sample.
bool Scheduler::admit_one(Request& req, Slot& slot) {
  std::span<const int32_t> all(req.tokens);
  CacheHit refused_hit;
  auto admission = cache_.admit(all, &refused_hit);
  if (admission && admission->hit.n_hit_tokens >= req.n_tokens()) {
    cache_.abort(admission->seq);
    admission = cache_.admit(all.first(all.size() - 1));
    if (!admission) refused_hit = cache_.match(all);
  }
  {
    const CacheHit hit = admission ? admission->hit : refused_hit;
    const int64_t device = hit.n_hit_tokens - hit.n_hit_host_tokens;
    if (req.n_preemptions == 0) {
      ++lookups_.lookups;
      lookups_.queries += req.n_tokens();
      lookups_.hits += device;
      lookups_.external_hits += hit.n_hit_host_tokens;
    } else {
      ++lookups_.preempted_lookups;
      lookups_.preempted_queries += req.n_tokens();
      lookups_.preempted_hits += device;
      lookups_.preempted_external_hits += hit.n_hit_host_tokens;
    }
  }
  if (!admission) return false;
  const CacheHit& hit = admission->hit;
  slot.seq = admission->seq;
  slot.restore_from = admission->restore_from;
  slot.host_load_bytes = hit.bytes_to_load;
  slot.host_load_s = hit.load_s;
  req.n_computed_tokens = hit.n_hit_tokens;
  if (req.n_preemptions == 0) {  // hit statistics describe the first admission only
    req.n_hit_tokens = std::min(hit.n_hit_tokens, req.n_prompt_tokens);
    req.n_kv_hit_tokens = std::min(hit.n_kv_tokens, req.n_prompt_tokens);
    req.n_host_hit_tokens = std::min(hit.n_hit_host_tokens, req.n_hit_tokens);
  }
  return true;
}

void Scheduler::reject_last_running() {
  Slot slot = std::move(running_.back());
  running_.pop_back();
  cache_.abort(slot.seq);
  slot.req->status = RequestStatus::Aborted;
  rejected_.push_back(std::move(*slot.req));
}

void Scheduler::reject_head() {
  Request req = std::move(*waiting_.front());
  waiting_.pop_front();
  req.status = RequestStatus::Aborted;
  rejected_.push_back(std::move(req));
}

void Scheduler::build_plan(SchedulePlan& plan) {
  plan.page_tokens = page_tokens_;
  for (const Slot& slot : running_) {
    if (slot.n_new == 0) continue;
    const Request& req = *slot.req;
    ScheduledSeq s;
    s.request_id = req.id;
    s.seq = slot.seq;
    s.begin = req.n_computed_tokens;
    s.end = s.begin + slot.n_new;
    s.tokens = std::span<const int32_t>(req.tokens).subspan(s.begin, slot.n_new);
    s.pages = cache_.page_table(slot.seq).first((s.end + page_tokens_ - 1) / page_tokens_);
    s.live_slot = cache_.live_slot(slot.seq);
    // Allocating checkpoint slots may evict (never from running sequences): the spans above stay valid.
    s.checkpoints = cache_.plan_checkpoints(slot.seq, s.begin, s.end);
    if (slot.just_admitted && s.begin > 0) s.restore_from = slot.restore_from;
    if (slot.just_admitted) {
      s.host_load_bytes = slot.host_load_bytes;
      s.host_load_s = slot.host_load_s;
    }
    s.samples = s.end == req.n_tokens();
    if (s.samples) s.sampling = &req.sampling;
    plan.n_scheduled_tokens += s.n_tokens();
    plan.seqs.push_back(std::move(s));
  }
  plan.transfers = cache_.take_transfers();  // everything decided while building this step
}

StepEvents Scheduler::apply(const SchedulePlan& plan, std::span<const int32_t> sampled_tokens) {
  DS_CHECK(plan.step_index == step_index_ && applied_step_ != step_index_,
           "scheduler: apply() got plan {} but the last unapplied step is {}", plan.step_index,
           applied_step_ == step_index_ ? -1 : step_index_);
  applied_step_ = step_index_;
  StepEvents events;
  events.rejected = std::move(rejected_);
  rejected_.clear();
  size_t n_sampled = 0, slot_i = 0;
  std::vector<size_t> done;
  for (const ScheduledSeq& s : plan.seqs) {
    while (slot_i < running_.size() && running_[slot_i].req->id != s.request_id) ++slot_i;
    DS_CHECK(slot_i < running_.size(), "scheduler: plan names request {} that is not running", s.request_id);
    Slot& slot = running_[slot_i];
    Request& req = *slot.req;
    slot.just_admitted = false;
    slot.host_load_bytes = 0;
    slot.host_load_s = 0;
    slot.restore_from = {};
    req.n_computed_tokens = s.end;
    // Only full pages are cached: commit prefill chunks, and decode steps that complete a page.
    bool page_done = s.end / page_tokens_ != s.begin / page_tokens_;
    if (s.n_tokens() > 1 || page_done || !s.checkpoints.empty())
      cache_.commit(slot.seq, req.tokens, req.n_computed_tokens);
    if (!s.samples) continue;
    DS_CHECK(n_sampled < sampled_tokens.size(), "scheduler: {} sampled tokens for step {}",
             sampled_tokens.size(), plan.step_index);
    const int32_t token = sampled_tokens[n_sampled++];
    req.tokens.push_back(token);
    events.tokens.push_back({req.id, token, req.n_output_tokens});
    if (++req.n_output_tokens == 1) events.first_token.push_back(req.id);
    if (req.sampling.is_stop(token)) req.stopped = true;
    if (req.done()) done.push_back(slot_i);
  }
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    Slot& slot = running_[*it];
    Request& req = *slot.req;
    cache_.finish(slot.seq, std::span<const int32_t>(req.tokens).first(req.n_computed_tokens));
    req.status = RequestStatus::Finished;
    events.finished.push_back(std::move(req));
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(*it));
  }
  std::reverse(events.finished.begin(), events.finished.end());
  return events;
}

}  // namespace ds
