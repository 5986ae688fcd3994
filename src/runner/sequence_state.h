// SequenceState: everything one sequence carries between forward calls when it owns its state
// (standalone runs and tests; the engine's executor keeps states in its own pools instead) — per
// KDA layer the conv windows and S, per MLA layer its latent rows, and how many tokens were
// consumed. Invariant: every layer's state describes exactly the first n_tokens tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/kda_state.h"
#include "layers/mla_latents.h"
#include "model/model_config.h"

namespace ds {

struct SequenceState {
  int64_t n_tokens = 0;             // tokens consumed so far (the next token's position)
  std::vector<KdaState> kda;        // [n_layer]; initialised for KDA layers only
  std::vector<MlaLatentStore> mla;  // [n_layer]; initialised for MLA layers only

  static SequenceState fresh(const ModelConfig& cfg);  // zero state, n_tokens = 0
  size_t kda_bytes() const;  // conv + S bytes over all layers (independent of length)
  size_t mla_bytes() const;  // latent bytes over all layers
};

// The KDA part of a SequenceState at one position: what a prefix-cache checkpoint stores.
struct KdaCheckpoint {
  int64_t n_tokens = 0;       // state after consuming this many tokens
  std::vector<KdaState> kda;  // [n_layer]; empty entries for MLA layers
};

}  // namespace ds
