// CUDA implementations of the batched KDA ops (kernels/kda.h). Arguments are validated by the
// dispatcher (kernels/kda.cpp); these require K == V == 128 and throw ds::Error otherwise.
#pragma once

#include "kernels/kda.h"

namespace ds::cuda {

void kda_prefill(const KdaPrefillArgs& a);
void kda_decode(const KdaDecodeArgs& a);

}  // namespace ds::cuda
