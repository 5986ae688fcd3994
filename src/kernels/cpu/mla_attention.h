// CPU implementation of kernels/mla_attention.h (f32, plain loops; the CUDA kernels' reference).
// Arguments are validated by the dispatcher.
#pragma once

#include "kernels/mla_attention.h"

namespace ds::cpu {

void mla_write_latents(const MlaPagedLatents& p, const TensorView& c, const TensorView& k_pe);
void mla_attention(const MlaPagedLatents& p, const MlaAttentionArgs& a);

}  // namespace ds::cpu
