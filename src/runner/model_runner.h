// ModelRunner: the CPU forward of a Kimi Linear checkpoint. Builds the layer stack from the
// ModelConfig and the bound weights, and runs a ForwardBatch: embedding, per layer the pre-norm
// residual block (mixer + FFN) — or, for Kimi K3 (attn_res_block_size > 0), the Block AttnRes
// stream — final norm, lm_head for the requested rows. Stateless between calls: all per-sequence
// state lives in the SequenceStates the batch points to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layers/attn_res.h"
#include "layers/glu_mlp.h"
#include "layers/kda_layer.h"
#include "layers/mla_layer.h"
#include "layers/moe_layer.h"
#include "model/model_config.h"
#include "runner/forward_batch.h"

namespace ds {

struct RunnerOptions {
  KdaRunOptions kda;  // chunk size, recurrent threshold
  MlaAttnMode mla_mode = MlaAttnMode::Auto;
  AttnResMode attn_res_mode = AttnResMode::Reference;  // K3 Block AttnRes evaluation form
  int64_t max_forward_bytes = 0;  // memory one forward may use; 0 = what this machine has available
};

class ModelRunner {
 public:
  // Loads config.json + safetensors from a checkpoint folder; throws ds::Error naming the file.
  static std::unique_ptr<ModelRunner> load(const std::string& dir, RunnerOptions opt = {});
  ~ModelRunner();

  const ModelConfig& config() const { return cfg_; }
  const RunnerOptions& options() const { return opt_; }
  SequenceState new_sequence() const { return SequenceState::fresh(cfg_); }

  // Runs the batch; advances every referenced SequenceState. Validates the whole batch first
  // (tokens, checkpoint positions, the model's maximum length, the memory estimate below), so a
  // bad batch throws ds::Error and leaves every state unchanged. Non-finite logits (NaN or inf
  // weights or inputs) throw ds::Error after the states were advanced: those states are unusable.
  ForwardResult forward(const ForwardBatch& batch) const;

  // Bytes a forward of `batch` allocates, estimated from its shape before any work: activations,
  // temporaries of the largest layer, logits rows, MLA latents appended, KDA checkpoints emitted.
  int64_t forward_bytes_estimate(const ForwardBatch& batch) const;

  // The KDA mixer of `layer` (nullptr for an MLA layer), e.g. to trace its intermediates in tests.
  const KdaLayer* kda_layer(int layer) const;

  struct Block;  // one decoder layer: norms, mixer, FFN

 private:
  ModelRunner() = default;
  void validate(const ForwardBatch& batch) const;
  void run_block(int layer, const ForwardBatch& batch, const LayerBatch& lb, float* x,
                 std::vector<std::vector<std::vector<KdaState>>>& emitted) const;
  void run_block_attn_res(int layer, const ForwardBatch& batch, const LayerBatch& lb, AttnResStream& st,
                          std::vector<std::vector<std::vector<KdaState>>>& emitted) const;
  void run_mixer(int layer, const ForwardBatch& batch, const LayerBatch& lb, const float* n, float* y,
                 std::vector<std::vector<std::vector<KdaState>>>& emitted) const;
  void run_ffn(int layer, const float* n, int64_t T, float* y) const;

  ModelConfig cfg_;
  RunnerOptions opt_;
  std::shared_ptr<const void> keep_alive_;  // owns the mapped checkpoint the views point into
  WeightView embed_;                        // [vocab, D]
  WeightView lm_head_;                      // [vocab, D]
  std::vector<float> final_norm_;           // f32 [D]
  std::vector<std::unique_ptr<Block>> blocks_;
  AttnResQueries attn_res_;  // folded AttnRes queries (attn_res_block_size > 0)
};

}  // namespace ds
