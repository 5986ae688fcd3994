#include "gpu/gpu_executor.h"

#include <chrono>

#include "core/check.h"
#include "exec/sampler.h"
#include "plan/model_profile.h"

namespace ds {

GpuExecutor::GpuExecutor(const DeviceModel& model, int64_t page_tokens, GpuExecutorOptions options)
    : model_(model),
      page_tokens_(page_tokens),
      opt_(options),
      pools_{model.make_pools(model.device(), false, page_tokens),
             model.make_pools(Device::Cpu, true, page_tokens)} {
  DS_CHECK(opt_.max_running > 0, "gpu executor: max_running {} must be > 0", opt_.max_running);
}

CacheModelSizes GpuExecutor::cache_sizes() const {
  const ModelConfig& cfg = model_.config();
  const ModelProfile prof = ModelProfile::from_config(cfg, "model");
  CacheModelSizes s;
  s.kv_bytes_per_token = int64_t(cfg.n_mla_layers()) * cfg.mla.latent_dim() * int64_t(sizeof(float));
  s.checkpoint_bytes = pools_[0].slot_floats() * int64_t(sizeof(float));
  s.live_state_bytes = s.checkpoint_bytes;
  s.flops_per_token = prof.linear_flops_per_token();
  s.attn_flops_per_token_ctx = prof.mla_attention_flops(1, 1 << 16) / double(1 << 16);
  return s;
}

const std::vector<float>& GpuExecutor::sampled_logits(RequestId id) const {
  static const std::vector<float> kNone;
  auto it = logits_.find(id);
  return it == logits_.end() ? kNone : it->second;
}

int64_t GpuExecutor::pool_slot(int tier, int32_t checkpoint_slot) const {
  DS_CHECK(checkpoint_slot >= 0, "gpu executor: checkpoint slot {}", checkpoint_slot);
  return tier == 0 ? opt_.max_running + checkpoint_slot : checkpoint_slot;
}

void GpuExecutor::perform(const CacheTransfer& t) {
  DS_CHECK(t.src_tier >= 0 && t.src_tier <= 1 && t.dst_tier >= 0 && t.dst_tier <= 1,
           "gpu executor: transfer between tiers {} and {}", t.src_tier, t.dst_tier);
  switch (t.kind) {
    case TransferKind::Page:
      pools_[t.dst_tier].copy_page(t.dst, pools_[t.src_tier], t.src);
      break;
    case TransferKind::Checkpoint:
      pools_[t.dst_tier].copy_slot(pool_slot(t.dst_tier, t.dst), pools_[t.src_tier],
                                   pool_slot(t.src_tier, t.src));
      break;
    case TransferKind::Restore:
      DS_CHECK(t.dst >= 0 && t.dst < opt_.max_running, "gpu executor: live slot {} not in [0, {})", t.dst,
               opt_.max_running);
      pools_[0].copy_slot(t.dst, pools_[t.src_tier], pool_slot(t.src_tier, t.src));
      break;
  }
  if (opt_.verify) tags_.apply(t);
}

StepResult GpuExecutor::execute(const SchedulePlan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  DS_CHECK(plan.page_tokens == page_tokens_, "gpu executor: plan pages of {} tokens, executor pages of {}",
           plan.page_tokens, page_tokens_);
  for (const CacheTransfer& t : plan.transfers) perform(t);
  StepResult result;
  if (plan.seqs.empty()) return result;

  DevicePools& pool = pools_[0];
  for (const ScheduledSeq& s : plan.seqs) {  // grow first: pointers are taken after
    for (int32_t p : s.pages) pool.reserve_pages(p);
    DS_CHECK(s.live_slot >= 0 && s.live_slot < opt_.max_running, "gpu executor: live slot {} not in [0, {})",
             s.live_slot, opt_.max_running);
    pool.reserve_slots(s.live_slot);
    for (const PlannedCheckpoint& c : s.checkpoints) pool.reserve_slots(pool_slot(0, c.slot));
  }
  DeviceStep step;
  step.allow_graph = opt_.decode_graphs;
  std::vector<std::pair<int64_t, int64_t>> duplicate_slots;  // (src, dst): one position, two slots
  for (const ScheduledSeq& s : plan.seqs) {
    if (opt_.verify) tags_.step(s, page_tokens_);
    if (s.begin == 0) pool.zero_slot(s.live_slot);
    DeviceSeqStep q;
    q.tokens = s.tokens;
    q.n_past = s.begin;
    q.pages = s.pages;
    q.live_slot = s.live_slot;
    q.logits = s.samples ? LogitsWant::Last : LogitsWant::None;
    q.argmax_only = s.samples && opt_.device_argmax && !opt_.keep_logits && s.sampling != nullptr &&
                    samples_by_argmax(*s.sampling);
    for (size_t c = 0; c < s.checkpoints.size(); ++c) {
      const PlannedCheckpoint& pc = s.checkpoints[c];
      if (!q.checkpoints.empty() && q.checkpoints.back().position == pc.position) {
        duplicate_slots.emplace_back(q.checkpoints.back().slot, pool_slot(0, pc.slot));
        continue;
      }
      q.checkpoints.push_back({pc.position, int32_t(pool_slot(0, pc.slot))});
    }
    step.seqs.push_back(q);
  }
  const DeviceForwardResult fr = model_.forward(step, pool);
  for (const auto& [src, dst] : duplicate_slots) pool.copy_slot(dst, pool, src);

  std::vector<int32_t> argmax(plan.seqs.size(), -1);
  for (size_t i = 0; i < plan.seqs.size(); ++i)
    if (step.seqs[i].argmax_only) {
      DS_CHECK(fr.tokens[i].size() == 1, "gpu executor: {} argmax tokens for one row", fr.tokens[i].size());
      argmax[i] = fr.tokens[i][0];
      ++device_argmax_tokens_;
    }
  sample_plan(plan, fr.logits, model_.config().vocab_size, result, opt_.keep_logits ? &logits_ : nullptr,
              "gpu executor", argmax);
  synchronize(model_.device());
  result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace ds
