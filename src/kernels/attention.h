// Causal softmax attention for one sequence over a cached prefix (MLA prefill, non-absorbed form),
// one interface for every device: queries are the n_q newest positions, keys/values cover all n_kv
// positions, so query i sees keys [0, n_kv − n_q + i].
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

struct AttnDims {
  int64_t n_q = 0;   // new query tokens
  int64_t n_kv = 0;  // key/value positions (>= n_q; the first n_kv − n_q are the cached prefix)
  int64_t H = 0;     // heads (keys/values per head: no grouping)
  int64_t Dk = 0;    // q/k head dim
  int64_t Dv = 0;    // v head dim
};

// q f32 [n_q, H*Dk], k f32 [n_kv, H*Dk], v f32 [n_kv, H*Dv], o f32 [n_q, H*Dv] (row views).
// o[i,h] = Σ_j softmax_j(scale · q[i,h]·k[j,h]) v[j,h] over j <= n_kv − n_q + i.
void attention_causal(const AttnDims& d, const TensorView& q, const TensorView& k, const TensorView& v,
                      float scale, const TensorView& o);

}  // namespace ds
