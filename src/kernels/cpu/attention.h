// Causal softmax attention for one sequence over a cached prefix (MLA prefill, non-absorbed form):
// queries are the n_q newest positions, keys/values cover all n_kv positions, so query i sees keys
// [0, n_kv − n_q + i]. f32 throughout; scores via small GEMMs on a per-head transposed K, exact
// two-pass softmax per 16-query block (no online rescaling). OpenMP over heads × query blocks.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention.h"

namespace ds::cpu {

// q f32 [n_q, H, Dk] (row stride q_stride >= H*Dk), k f32 [n_kv, H, Dk] (k_stride),
// v f32 [n_kv, H, Dv] (v_stride), o f32 [n_q, H, Dv] (o_stride) overwritten.
// o[i,h] = Σ_j softmax_j(scale · q[i,h]·k[j,h]) v[j,h] over j <= n_kv − n_q + i.
void attention_causal(const AttnDims& d, const float* q, int64_t q_stride, const float* k, int64_t k_stride,
                      const float* v, int64_t v_stride, float scale, float* o, int64_t o_stride);

// Reference: per query, double-accumulated scores and outputs, single thread.
void attention_causal_ref(const AttnDims& d, const float* q, int64_t q_stride, const float* k,
                          int64_t k_stride, const float* v, int64_t v_stride, float scale, float* o,
                          int64_t o_stride);

// Absorbed MLA decode attention (kernels/attention.h): one parallel region over sequences × heads.
void latent_attention(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                      float scale);

// Reference: the same math per query and head in double, single thread.
void latent_attention_ref(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                          float scale);

}  // namespace ds::cpu
