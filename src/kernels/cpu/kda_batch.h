// CPU implementations of the batched KDA ops (kernels/kda.h kda_prefill / kda_decode): composed
// from the per-sequence CPU kernels, f32 math, bf16 or f32 activations. They are the references the
// CUDA implementations are tested against. Arguments are validated by the caller (kernels/kda.cpp).
#pragma once

#include "kernels/kda.h"

namespace ds::cpu {

void kda_prefill(const KdaPrefillArgs& a);
void kda_decode(const KdaDecodeArgs& a);

}  // namespace ds::cpu
