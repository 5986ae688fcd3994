#include "runner/sequence_state.h"

namespace ds {

SequenceState SequenceState::fresh(const ModelConfig& cfg) {
  SequenceState s;
  s.kda.resize(size_t(cfg.n_layer));
  s.mla.resize(size_t(cfg.n_layer));
  for (int l = 0; l < cfg.n_layer; ++l) {
    if (cfg.layer_kind[size_t(l)] == LayerKind::Kda)
      s.kda[size_t(l)].init(cfg.kda.n_head, cfg.kda.head_dim, cfg.kda.conv_kernel);
    else
      s.mla[size_t(l)].init(cfg.mla.latent_dim());
  }
  return s;
}

size_t SequenceState::kda_bytes() const {
  size_t n = 0;
  for (const KdaState& k : kda) n += (k.conv.size() + k.S.size()) * sizeof(float);
  return n;
}

size_t SequenceState::mla_bytes() const {
  size_t n = 0;
  for (const MlaLatentStore& m : mla) n += size_t(m.n_tokens) * size_t(m.latent_dim) * sizeof(float);
  return n;
}

}  // namespace ds
