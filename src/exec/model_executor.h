// ModelExecutor: the Executor over the CPU ModelRunner. It owns the step's storage, indexed by the
// ids in the plan: a paged MLA latent pool per tier (device pages, host pages), KDA state slots
// (device live slots, device and host checkpoint slots). A step performs the plan's transfers in
// order (demotions, promotions, restores of hit checkpoints into live slots), zeroes the live slot
// of every sequence starting at token 0, runs one forward over all scheduled sequences reading and
// writing latents through their page tables and states in place, writes each planned checkpoint
// straight into its slot, and samples per request (sampler.h). The duration is the measured wall
// time of the step.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cache/cache_config.h"
#include "exec/content_tags.h"
#include "exec/executor.h"
#include "exec/state_pools.h"
#include "runner/model_runner.h"

namespace ds {

struct ModelExecutorOptions {
  bool verify = false;       // track ContentTags and check every sequence before computing (tests)
  bool keep_logits = false;  // keep each sampled position's logits per request (tests)
};

class ModelExecutor final : public Executor {
 public:
  // `runner` must outlive the executor; page_tokens must equal the cache's page size.
  ModelExecutor(const ModelRunner& runner, int64_t page_tokens, ModelExecutorOptions options = {});

  StepResult execute(const SchedulePlan& plan) override;

  // The byte sizes the cache must account for this executor's storage (f32 latents and states)
  // and the model's FLOP proxies for cost-aware eviction.
  CacheModelSizes cache_sizes() const;
  int64_t page_tokens() const { return page_tokens_; }
  // Bytes the pools hold now (they grow to the highest page / slot id the cache handed out).
  int64_t pool_bytes() const;

  // keep_logits: f32 [n_sampled, vocab] logits of each sampled token of the request, in order.
  const std::vector<float>& sampled_logits(RequestId id) const;

 private:
  void perform(const CacheTransfer& t);

  const ModelRunner& runner_;
  int64_t page_tokens_;
  ModelExecutorOptions opt_;
  std::vector<int> mla_index_, kda_index_;  // [n_layer] index among MLA / KDA layers, or -1
  int n_mla_ = 0, n_kda_ = 0;
  LatentPagePool pages_[2];       // [tier]
  StateSlotPool live_;            // device live slots
  StateSlotPool checkpoints_[2];  // [tier]
  ContentTags tags_;
  std::unordered_map<RequestId, std::vector<float>> logits_;
};

}  // namespace ds
