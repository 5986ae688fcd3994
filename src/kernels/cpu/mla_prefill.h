// CPU implementation of kernels/mla_prefill.h (plain loops: f32 arithmetic over the bf16 inputs; the
// CUDA kernels' reference). Arguments are validated by the dispatcher.
#pragma once

#include "kernels/mla_prefill.h"

namespace ds::cpu {

void mla_gather_latents(const MlaPagedLatents& p, int64_t page_off, int64_t L, const TensorView& out);
void mla_attention_expanded(const MlaExpandedArgs& a);

}  // namespace ds::cpu
