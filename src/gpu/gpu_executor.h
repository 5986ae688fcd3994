// GpuExecutor: the Executor over the device forward (gpu/device_model.h). Its step state lives on
// the model's device — MLA latent pages and KDA state slots in one DevicePools (HBM on CUDA) — with
// the cache's host tier in pinned host memory (a second DevicePools). Slot ids: device live slot s
// is pool slot s, device checkpoint slot c is pool slot max_running + c (one pool, so that the
// forward writes checkpoints straight into their slots); host checkpoint slot c is host slot c.
// A step performs the plan's transfers in order as device / host copies (demotions, promotions,
// restores of hit checkpoints into live slots), zeroes the live slot of every sequence starting at
// token 0, runs one forward over all scheduled sequences and samples per request: on the device
// (argmax, only the token id copied back) when the request's token is its logits' argmax, else from
// its logits row copied to the host; the semantics are sample_plan's either way. The
// duration is the measured wall time of the step (device synchronised). A pure-decode step (one
// token per sequence, each sampled, no checkpoint) replays the model's CUDA graph of its batch size
// when the model records them (DeviceModel rewrites the graph's fixed-address index buffers and
// re-records when the pools moved); every other step runs eagerly.
// With a Device::Cpu model the same executor runs over host memory (the CI tests of the wiring).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cache/cache_config.h"
#include "exec/content_tags.h"
#include "exec/executor.h"
#include "gpu/device_model.h"

namespace ds {

struct GpuExecutorOptions {
  int64_t max_running = 64;  // live slots (the scheduler's max_running); checkpoint slots follow them
  bool verify = false;       // track ContentTags and check every sequence before computing (tests)
  bool keep_logits = false;  // keep each sampled position's logits per request (tests)
  // Pure-decode steps replay the model's decode graph of their batch size when the model records
  // them (DeviceModelOptions::decode_graphs); false: every step runs eagerly.
  bool decode_graphs = true;
  // Requests whose token is their logits' argmax (samples_by_argmax) get it computed on the model's
  // device, and only the token id crosses to the host; false (or keep_logits): every sampled row
  // crosses and is sampled on the host.
  bool device_argmax = true;
};

class GpuExecutor final : public Executor {
 public:
  // `model` must outlive the executor; page_tokens must equal the cache's page size.
  GpuExecutor(const DeviceModel& model, int64_t page_tokens, GpuExecutorOptions options = {});

  StepResult execute(const SchedulePlan& plan) override;

  // Byte sizes the cache must account for this executor's storage (f32 latents and states) and the
  // model's FLOP proxies.
  CacheModelSizes cache_sizes() const;
  int64_t page_tokens() const { return page_tokens_; }
  int64_t pool_bytes() const { return pools_[0].bytes() + pools_[1].bytes(); }
  const DevicePools& device_pools() const { return pools_[0]; }
  int32_t device_slot_of_checkpoint(int32_t c) const { return int32_t(opt_.max_running + c); }

  // keep_logits: f32 [n_sampled, vocab] logits of each sampled token of the request, in order.
  const std::vector<float>& sampled_logits(RequestId id) const;
  // Sampled tokens taken from the device argmax so far (device_argmax).
  int64_t device_argmax_tokens() const { return device_argmax_tokens_; }

 private:
  void perform(const CacheTransfer& t);
  int64_t pool_slot(int tier, int32_t checkpoint_slot) const;

  const DeviceModel& model_;
  int64_t page_tokens_;
  GpuExecutorOptions opt_;
  DevicePools pools_[2];  // [tier]: device, pinned host
  ContentTags tags_;
  std::unordered_map<RequestId, std::vector<float>> logits_;
  int64_t device_argmax_tokens_ = 0;
};

}  // namespace ds
