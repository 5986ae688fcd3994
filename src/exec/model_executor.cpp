#include "exec/model_executor.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "exec/sampler.h"
#include "plan/model_profile.h"

namespace ds {
namespace {

int count_kind(const ModelConfig& c, LayerKind k) {
  return int(std::count(c.layer_kind.begin(), c.layer_kind.end(), k));
}

}  // namespace

ModelExecutor::ModelExecutor(const ModelRunner& runner, int64_t page_tokens, ModelExecutorOptions options)
    : runner_(runner),
      page_tokens_(page_tokens),
      opt_(options),
      n_mla_(count_kind(runner.config(), LayerKind::Mla)),
      n_kda_(count_kind(runner.config(), LayerKind::Kda)),
      pages_{LatentPagePool(n_mla_, page_tokens, runner.config().mla.latent_dim()),
             LatentPagePool(n_mla_, page_tokens, runner.config().mla.latent_dim())},
      live_(n_kda_, runner.kda_state_shape()),
      checkpoints_{StateSlotPool(n_kda_, runner.kda_state_shape()),
                   StateSlotPool(n_kda_, runner.kda_state_shape())} {
  const ModelConfig& cfg = runner.config();
  int m = 0, k = 0;
  for (LayerKind kind : cfg.layer_kind) {
    mla_index_.push_back(kind == LayerKind::Mla ? m++ : -1);
    kda_index_.push_back(kind == LayerKind::Kda ? k++ : -1);
  }
}

CacheModelSizes ModelExecutor::cache_sizes() const {
  const ModelConfig& cfg = runner_.config();
  const ModelProfile prof = ModelProfile::from_config(cfg, "model");
  CacheModelSizes s;
  s.kv_bytes_per_token = int64_t(n_mla_) * cfg.mla.latent_dim() * int64_t(sizeof(float));
  s.checkpoint_bytes = int64_t(n_kda_) * int64_t(runner_.kda_state_shape().floats() * sizeof(float));
  s.live_state_bytes = s.checkpoint_bytes;
  s.flops_per_token = prof.linear_flops_per_token();
  s.attn_flops_per_token_ctx = prof.mla_attention_flops(1, 1 << 16) / double(1 << 16);
  return s;
}

int64_t ModelExecutor::pool_bytes() const {
  return pages_[0].bytes() + pages_[1].bytes() + live_.bytes() + checkpoints_[0].bytes() +
         checkpoints_[1].bytes();
}

const std::vector<float>& ModelExecutor::sampled_logits(RequestId id) const {
  static const std::vector<float> kNone;
  auto it = logits_.find(id);
  return it == logits_.end() ? kNone : it->second;
}

void ModelExecutor::perform(const CacheTransfer& t) {
  DS_CHECK(t.src_tier >= 0 && t.src_tier <= 1 && t.dst_tier >= 0 && t.dst_tier <= 1,
           "model executor: transfer between tiers {} and {}", t.src_tier, t.dst_tier);
  switch (t.kind) {
    case TransferKind::Page:
      pages_[t.dst_tier].copy_page(t.dst, pages_[t.src_tier], t.src);
      break;
    case TransferKind::Checkpoint:
      checkpoints_[t.dst_tier].copy_slot(t.dst, checkpoints_[t.src_tier], t.src);
      break;
    case TransferKind::Restore:
      live_.copy_slot(t.dst, checkpoints_[t.src_tier], t.src);
      break;
  }
  if (opt_.verify) tags_.apply(t);
}

StepResult ModelExecutor::execute(const SchedulePlan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  DS_CHECK(plan.page_tokens == page_tokens_, "model executor: plan pages of {} tokens, executor pages of {}",
           plan.page_tokens, page_tokens_);
  for (const CacheTransfer& t : plan.transfers) perform(t);
  StepResult result;
  if (plan.seqs.empty()) return result;

  // Grow the pools for every id of the step first: views taken below must stay valid.
  for (const ScheduledSeq& s : plan.seqs) {
    for (int32_t p : s.pages) pages_[0].reserve(p);
    live_.reserve(s.live_slot);
    for (const PlannedCheckpoint& c : s.checkpoints) checkpoints_[0].reserve(c.slot);
  }
  const ModelConfig& cfg = runner_.config();
  const int L = cfg.mla.latent_dim();
  ForwardStep step;
  std::vector<std::pair<int32_t, int32_t>> duplicate_slots;  // (src, dst): same position twice
  for (const ScheduledSeq& s : plan.seqs) {
    if (opt_.verify) tags_.step(s, page_tokens_);
    if (s.begin == 0) live_.zero_slot(s.live_slot);
    SequenceStep seq;
    seq.tokens = s.tokens;
    seq.logits = s.samples ? LogitsWant::Last : LogitsWant::None;
    seq.state.n_tokens = s.begin;
    seq.state.kda.resize(size_t(cfg.n_layer));
    seq.state.mla.resize(size_t(cfg.n_layer));
    for (int l = 0; l < cfg.n_layer; ++l) {
      if (kda_index_[size_t(l)] >= 0)
        seq.state.kda[size_t(l)] = live_.view(s.live_slot, kda_index_[size_t(l)]);
      else
        seq.state.mla[size_t(l)] =
            MlaLatentPages{pages_[0].layer(mla_index_[size_t(l)]), s.pages, page_tokens_, L, s.begin};
    }
    for (size_t c = 0; c < s.checkpoints.size(); ++c) {
      const PlannedCheckpoint& pc = s.checkpoints[c];
      if (!seq.emit_state_at.empty() && seq.emit_state_at.back() == pc.position) {
        duplicate_slots.emplace_back(s.checkpoints[c - 1].slot, pc.slot);
        continue;
      }
      seq.emit_state_at.push_back(pc.position);
      std::vector<KdaStateView> to(size_t(cfg.n_layer));
      for (int l = 0; l < cfg.n_layer; ++l)
        if (kda_index_[size_t(l)] >= 0) to[size_t(l)] = checkpoints_[0].view(pc.slot, kda_index_[size_t(l)]);
      seq.emit_to.push_back(std::move(to));
    }
    step.seqs.push_back(std::move(seq));
  }
  const ForwardResult fr = runner_.forward(step);
  for (const auto& [src, dst] : duplicate_slots) checkpoints_[0].copy_slot(dst, checkpoints_[0], src);

  sample_plan(plan, fr.logits, cfg.vocab_size, result, opt_.keep_logits ? &logits_ : nullptr,
              "model executor");
  result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace ds
