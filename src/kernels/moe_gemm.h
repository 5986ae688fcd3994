// Grouped expert GEMMs of the routed experts over many rows (prefill chunks): every active
// expert's product over its grouped rows (MoeGroups, kernels/moe.h) in one call, with bf16 inputs
// and f32 accumulation. On CUDA each is one launch over every expert (tensor cores: wgmma or mma.sync,
// the tile list built on the device from the group offsets: no host round trip); the CPU
// implementations are the plain references.
// MXFP4 experts are dequantised tile by tile inside the GEMM (exactly: an E2M1 code times an E8M0
// scale is a bf16 value), so the CPU reference sums the same products as for bf16 weights.
//  - moe_gemm_glu: h = act(x_r · gate_eᵀ, x_r · up_eᵀ) (experts.act: SiLU-GLU or SiTU-GLU) with x_r =
//  x[row_token[r]] (the token
//    permutation read in place: no gathered copy of x), rounded to bf16;
//  - moe_gemm_down: y = h_r · down_eᵀ in f32 (the rows the weighted combine reads).
#pragma once

#include "core/tensor_view.h"
#include "kernels/moe.h"

namespace ds {

// Whether the grouped GEMMs take these experts (bf16 weights with D and I multiples of 8, or MXFP4
// with D and I multiples of 32).
bool moe_gemm_supported(const GroupedExperts& w);

// Which CUDA kernel: Auto takes the warpgroup-MMA (wgmma) kernel for bf16 experts whose inner size is
// a multiple of 64, else the mma.sync one; MmaSync always the latter (the comparison point). The CPU
// ignores it.
enum class MoeGemmKernel { Auto, MmaSync };

// x bf16 [T, D] (row view, stride a multiple of 8) -> h bf16 [T*k, I] (grouped rows).
void moe_gemm_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h,
                  MoeGemmKernel kernel = MoeGemmKernel::Auto);

// h bf16 [T*k, I] (grouped rows, stride a multiple of 8) -> y f32 [T*k, D].
void moe_gemm_down(const TensorView& h, const GroupedExperts& w, const MoeGroups& g, const TensorView& y,
                   MoeGemmKernel kernel = MoeGemmKernel::Auto);

}  // namespace ds
