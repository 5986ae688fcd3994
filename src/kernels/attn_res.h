// Block Attention Residuals mixing (Kimi K3; Attention Residuals, arXiv 2603.15031), one interface
// for every device, f32. Per token t, over sources V_i [T, D]:
//   logit_i = (V_i · q) · rsqrt(mean(V_i²) + eps),  out = Σ_i softmax(logit)_i V_i.
// Two evaluation forms: the reference mix over all sources, and the two-phase form (phase 1 once
// per block over the committed block vectors for all of the block's queries, phase 2 an online-
// softmax merge with the partial sum P per sublayer).
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor_view.h"

namespace ds {

inline constexpr int kAttnResMaxSources = 32;

// sources: up to kAttnResMaxSources contiguous f32 [T, D] views; query f32 [D]; out f32 [T, D]
// (must not alias a source).
void attn_res_mix(std::span<const TensorView> sources, const TensorView& query, float eps,
                  const TensorView& out);

// Phase 1: for every query j and token t over the committed blocks B_i: m = max_i logit,
// s = Σ_i e^(logit - m), o = Σ_i e^(logit - m) B_i. blocks f32 [T, D] each; queries f32 [Q, D];
// m, s f32 [Q, T]; o f32 [Q, T, D].
void attn_res_block_scores(std::span<const TensorView> blocks, const TensorView& queries, float eps,
                           const TensorView& m, const TensorView& s, const TensorView& o);

// Phase 2 for query j: h = (e^(m-M) o + e^(l-M) P) / (e^(m-M) s + e^(l-M)) with l the logit of the
// partial sum P f32 [T, D] and M = max(m, l); partial with null data: h = o / s. out f32 [T, D].
void attn_res_merge(int64_t j, const TensorView& m, const TensorView& s, const TensorView& o,
                    const TensorView& partial, const TensorView& query, float eps, const TensorView& out);

}  // namespace ds
