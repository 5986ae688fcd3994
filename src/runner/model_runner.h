// ModelRunner: the CPU forward of a Kimi Linear checkpoint. Builds the layer stack from the
// ModelConfig and the bound weights, and runs a ForwardStep (states as views into memory the caller
// owns, e.g. an executor's pools) or a ForwardBatch (owning SequenceStates): embedding, per layer
// the pre-norm residual block (mixer + FFN) — or, for Kimi K3 (attn_res_block_size > 0), the Block
// AttnRes stream — final norm, lm_head for the requested rows. Stateless between calls.
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
#include "model/safetensors.h"
#include "runner/forward_batch.h"

namespace ds {

struct RunnerOptions {
  KdaRunOptions kda;  // chunk size, recurrent threshold
  MlaAttnMode mla_mode = MlaAttnMode::Auto;
  AttnResMode attn_res_mode = AttnResMode::Reference;  // K3 Block AttnRes evaluation form
  int64_t max_forward_bytes = 0;  // memory one forward may use; 0 = what this machine has available
  WeightMemory weights = WeightMemory::Mapped;  // mmapped, or copied into huge pages
};

class ModelRunner {
 public:
  // Loads config.json + safetensors from a checkpoint folder; throws ds::Error naming the file.
  static std::unique_ptr<ModelRunner> load(const std::string& dir, RunnerOptions opt = {});
  ~ModelRunner();

  const ModelConfig& config() const { return cfg_; }
  const RunnerOptions& options() const { return opt_; }
  SequenceState new_sequence() const { return SequenceState::fresh(cfg_); }

  // Runs the batch; advances every referenced SequenceState and returns the emitted checkpoints.
  // Validates the whole batch first (tokens, checkpoint positions, the model's maximum length, the
  // memory estimate below), so a bad batch throws ds::Error and leaves every state unchanged.
  // Non-finite logits (NaN or inf weights or inputs) throw ds::Error after the states were
  // advanced: those states are unusable.
  ForwardResult forward(const ForwardBatch& batch) const;

  // Runs the step over state views: writes each sequence's new MLA latent rows into its pages,
  // advances its live KDA states in place, writes the requested checkpoint states. Validates the
  // whole step first (ds::Error, nothing written; non-finite logits as above). The caller advances
  // its own token counters.
  ForwardResult forward(const ForwardStep& step) const;

  // Bytes a forward of `batch` allocates, estimated from its shape before any work: activations,
  // temporaries of the largest layer, logits rows, MLA latents appended, KDA checkpoints emitted.
  int64_t forward_bytes_estimate(const ForwardBatch& batch) const;

  // Sizes of one sequence's KDA state: the shape of each KDA layer (layers in order).
  KdaStateShape kda_state_shape() const;

  // The KDA mixer of `layer` (nullptr for an MLA layer), e.g. to trace its intermediates in tests.
  const KdaLayer* kda_layer(int layer) const;

  struct Block;  // one decoder layer: norms, mixer, FFN

 private:
  ModelRunner() = default;
  struct StepShape {  // what the memory estimate needs of one sequence
    int64_t n_new = 0, n_context = 0;
    LogitsWant logits = LogitsWant::Last;
    int64_t n_emit = 0;
  };
  int64_t forward_bytes_estimate(std::span<const StepShape> seqs) const;
  void check_memory(std::span<const StepShape> seqs) const;
  void check_inputs(size_t s, std::span<const int32_t> tokens, int64_t n_tokens,
                    std::span<const int64_t> emit_state_at) const;
  void validate(const ForwardStep& step) const;
  void run_block(int layer, const ForwardStep& step, const LayerBatch& lb, float* x) const;
  void run_block_attn_res(int layer, const ForwardStep& step, const LayerBatch& lb, AttnResStream& st) const;
  void run_mixer(int layer, const ForwardStep& step, const LayerBatch& lb, const float* n, float* y) const;
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
