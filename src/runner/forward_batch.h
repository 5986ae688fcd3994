// One step of the model runner as data: a batch of sequences of different lengths, each with the
// new tokens to append, where its state lives, which logits to return and where to write KDA state
// checkpoints. Two forms:
//  - ForwardStep: states as views (KdaStateView / MlaLatentPages) into memory someone else owns —
//    the executor's paged latent pool and state slots. The runner writes through the views and
//    never allocates state.
//  - ForwardBatch: states as owning SequenceStates (standalone runs and tests); checkpoints come
//    back as owned KdaCheckpoints.
// Passed by const&; the runner mutates only the states the batch refers to.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "layers/kda_state.h"
#include "layers/mla_latents.h"
#include "runner/sequence_state.h"

namespace ds {

enum class LogitsWant : uint8_t { None, Last, All };

// Where one sequence's state lives during one forward call.
struct SequenceView {
  int64_t n_tokens = 0;             // tokens consumed before this call (position of the first new one)
  std::vector<KdaStateView> kda;    // [n_layer]: live state of each KDA layer (unset for MLA layers)
  std::vector<MlaLatentPages> mla;  // [n_layer]: latent pages of each MLA layer (unset for KDA layers),
                                    // room for n_tokens + n_new rows; n_tokens equal to the above
};

struct SequenceStep {
  std::span<const int32_t> tokens;  // I32 [n_new] token ids to append (non-empty)
  SequenceView state;               // advanced in place by n_new tokens (the caller moves its counters)
  LogitsWant logits = LogitsWant::Last;
  // Absolute token counts p in (n_tokens, n_tokens + n_new], ascending, after which the KDA state
  // is written to emit_to[i] ([n_layer] views, set for KDA layers).
  std::vector<int64_t> emit_state_at;
  std::vector<std::vector<KdaStateView>> emit_to;
};

struct ForwardStep {
  std::vector<SequenceStep> seqs;
  bool capture_layer_outputs = false;  // keep the residual stream after each layer (tests)
};

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
  std::vector<std::vector<KdaCheckpoint>> checkpoints;  // ForwardBatch only: per seq, emit_state_at order
  std::vector<std::vector<float>> layer_outputs;        // [n_layer] f32 [T_total, D] (if captured)
};

}  // namespace ds
