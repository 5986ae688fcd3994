// Token-major expert GLU for a few tokens (decode): y[t] (+)= Σ_j weight[t, j] · expert_{e}(x[t]) +
// shared(x[t]) with e = expert[t, j] and expert(x) = down(act(gate x, up x)) (experts.act: SiLU or
// SiTU; MXFP4 experts decoded inside the products, with no shared expert). Every token reads
// the rows of its own k experts (no grouping by expert, no separate combine), and the shared expert
// is one more term of weight 1 — on CUDA two launches for the whole routed + shared MoE after the
// router. Each expert's weights are read once per token that chose it, so this pays off where few
// tokens share an expert (batch 1-8); the grouped GLU (kernels/moe.h) reads each active expert
// once. The CPU implementation is the plain reference of the CUDA kernels.
#pragma once

#include "core/tensor_view.h"
#include "core/weight_view.h"
#include "kernels/moe.h"

namespace ds {

struct MoeTokenGluArgs {
  TensorView x;             // f32 [T, D]
  TensorView expert;        // I32 [T, k] contiguous (moe_route)
  TensorView weight;        // f32 [T, k] contiguous (moe_route)
  GroupedExperts experts;   // routed experts, gate/up [I, D], down [D, I]
  WeightView shared_gate;   // [I, D] with the (dense) experts' dtype, or data == nullptr (none)
  WeightView shared_up;     // [I, D]
  WeightView shared_down;   // [D, I]
  TensorView h;             // f32 [T * (k + 1 if shared), I] scratch
  TensorView y;             // f32 [T, D]
  bool accumulate = false;  // y += instead of y =
};
void moe_token_glu(const MoeTokenGluArgs& a);

}  // namespace ds
