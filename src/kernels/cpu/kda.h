// KDA (Kimi Delta Attention) core for one sequence, f32: the per-token recurrence (the oracle, as
// `naive_recurrent_kda` in fla-org/flash-linear-attention `fla/ops/kda/naive.py`) and the chunked
// WY/UT prefill (Kimi Linear tech report, arXiv 2510.26692 §3.1) that can emit the state at chunk boundaries
// (prefix-cache checkpoints). Inputs are already activated: q,k L2-normalised, g = log-decay <= 0,
// beta = sigmoid(b). State S is [H, K, V] (Kimi-Linear / HF layout, rows = key dims).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kda.h"

namespace ds::cpu {

// Plain per-token recurrence, written out literally (f32 throughout, single thread).
void kda_recurrent_ref(const KdaDims& d, const KdaTensors& t, float scale);

// Same math, optimised for decode (few tokens): vectorised, OpenMP over heads.
void kda_recurrent(const KdaDims& d, const KdaTensors& t, float scale);

// Many independent recurrences (kernels/kda.h) in one parallel region over jobs × heads × value
// tiles.
void kda_recurrent_batch(std::span<const KdaRecurrentJob> jobs, float scale);

// Chunked prefill (WY/UT form, chunk size `chunk`, T need not be a multiple of it).
// emit_at: sorted, strictly increasing token counts in (0, T], each a multiple of `chunk` or == T;
// emit_states[i] receives the state after emit_at[i] tokens, f32 [H, K, V]. Throws ds::Error on a
// bad chunk size or boundary list. OpenMP over heads.
void kda_chunked(const KdaDims& d, const KdaTensors& t, float scale, int64_t chunk = 64,
                 std::span<const int64_t> emit_at = {}, std::span<float* const> emit_states = {});

}  // namespace ds::cpu
