// Routed-MoE steps of the device forward that stay on the device (one interface for every device;
// the CPU implementations are the plain references of the CUDA kernels):
//  - moe_route: the sigmoid top-k router (HF `modeling_kimi.py` KimiMoEGate): f32 scores
//    sigmoid(logit), selection by score + correction bias (top-k, ties to the lower expert id),
//    mixture weights from the unbiased scores, renormalised when asked (k > 1), times scaling;
//  - moe_group: the token permutation — rows grouped by expert (token order inside a group), the
//    group offsets and the list of active experts;
//  - moe_grouped_glu: every active expert's SiLU-GLU over its rows in one call, reading each
//    active expert's weights once (small batches: decode), with no host round trip, so that a
//    decode step can be recorded as a graph.
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

struct MoeRouteArgs {
  TensorView logits;  // f32 [T, E] contiguous
  TensorView bias;    // f32 [E] contiguous, or data == nullptr (no correction bias)
  int k = 0;
  bool renormalize = true;
  float scaling = 1.0f;
  TensorView expert;  // I32 [T, k] out, by descending selection score
  TensorView weight;  // f32 [T, k] out
};
void moe_route(const MoeRouteArgs& a);

// The grouping of T*k (token, slot) pairs by expert; all I32, contiguous, on one device.
struct MoeGroups {
  TensorView offsets;    // [E + 1]: rows of expert e are offsets[e] .. offsets[e+1]
  TensorView active;     // [E + 1]: active[0] = number of experts with rows, then their ids ascending
  TensorView row_token;  // [T*k]: token of each grouped row
  TensorView pos;        // [T*k]: grouped row of (t, j), row-major [T, k]
};
// expert I32 [T, k] (each in [0, E)) -> groups.
void moe_group(const TensorView& expert, int64_t E, const MoeGroups& g);

// The experts' GLU activation act(gate, up): SiLU(gate)·up (SwiGLU), or K3's SiTU-GLU
// [β₁ tanh(gate/β₁) sigmoid(gate)] · [β₂ tanh(up/β₂)] (β₂ <= 0: up unclipped), in f32.
struct ExpertAct {
  bool situ = false;
  float beta = 4.0f, linear_beta = 25.0f;
};

// Routed experts stored as separate matrices, addressed through a table of E*3 pointers on the
// experts' device: gate [I, D] of expert e at ptrs[e], up at ptrs[E + e], down [D, I] at
// ptrs[2E + e]. dtype F32, BF16, or U8 for MXFP4 (compressed-tensors mxfp4-pack-quantized): then
// ptrs hold the packed codes u8 [rows, cols/2] and `scales` (the same layout) the E8M0 scales
// u8 [rows, cols/32].
struct GroupedExperts {
  const void* const* ptrs = nullptr;
  DType dtype = DType::BF16;
  int64_t E = 0, I = 0, D = 0;
  Device device = Device::Cpu;
  const void* const* scales = nullptr;  // MXFP4 only
  ExpertAct act = {};
  bool mxfp4() const { return dtype == DType::U8; }
};

// y f32 [T*k, D] (grouped rows) = down_e(silu(gate_e x) ⊙ up_e x) with x = x[row_token[row]] and e
// the row's expert; h f32 [T*k, I] is scratch. x f32 [T, D]. D and I multiples of 8; F32/BF16
// experts with the SiLU activation only.
void moe_grouped_glu(const TensorView& x, const GroupedExperts& w, const MoeGroups& g, const TensorView& h,
                     const TensorView& y);

}  // namespace ds
