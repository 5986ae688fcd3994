// Grouped expert GEMMs of the routed experts over many rows (prefill chunks): every active
// expert's product over its grouped rows (MoeGroups, kernels/moe.h) in one call, with bf16 inputs
// and f32 accumulation. On CUDA each is one launch over every expert (tensor cores, the tile list
// built on the device from the group offsets: no host round trip); the CPU implementations are the
// plain references.
//  - moe_gemm_glu: h = silu(x_r · gate_eᵀ) ⊙ (x_r · up_eᵀ) with x_r = x[row_token[r]] (the token
//    permutation read in place: no gathered copy of x), rounded to bf16;
//  - moe_gemm_down: y = h_r · down_eᵀ in f32 (the rows the weighted combine reads).
#pragma once

#include "core/tensor_view.h"
#include "kernels/moe.h"

namespace ds {

// Whether the grouped GEMMs take these experts (bf16 weights, D and I multiples of 8).
bool moe_gemm_supported(const GroupedExperts& w);

// x bf16 [T, D] (row view, stride a multiple of 8) -> h bf16 [T*k, I] (grouped rows).
void moe_gemm_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h);

// h bf16 [T*k, I] (grouped rows, stride a multiple of 8) -> y f32 [T*k, D].
void moe_gemm_down(const TensorView& h, const GroupedExperts& w, const MoeGroups& g, const TensorView& y);

}  // namespace ds
