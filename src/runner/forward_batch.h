// ForwardBatch: one step of the model runner as data — a batch of sequences of different lengths,
// each with its own state and new tokens, which logits to return and where to emit KDA state
// checkpoints. Passed by const&; the runner mutates only the SequenceStates it points to.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/sequence_state.h"

namespace ds {

enum class LogitsWant : uint8_t { None, Last, All };

struct SequenceInput {
  std::span<const int32_t> tokens;  // I32 [n_new] token ids to append (must be non-empty)
  SequenceState* state = nullptr;   // advanced by n_new tokens
  LogitsWant logits = LogitsWant::Last;
  // Absolute token counts p in (state->n_tokens, state->n_tokens + n_new] after which the KDA state
  // is copied out (prefix-cache checkpoints), ascending. Chunk-aligned p use the chunk boundaries.
  std::vector<int64_t> emit_state_at;
};

struct ForwardBatch {
  std::vector<SequenceInput> seqs;
  bool capture_layer_outputs = false;  // keep the residual stream after each layer (tests)
};

struct ForwardResult {
  std::vector<std::vector<float>> logits;               // per seq: f32 [n_rows, vocab] (0, 1 or n_new rows)
  std::vector<std::vector<KdaCheckpoint>> checkpoints;  // per seq, in emit_state_at order
  std::vector<std::vector<float>> layer_outputs;        // [n_layer] f32 [T_total, D] (if captured)
};

}  // namespace ds
