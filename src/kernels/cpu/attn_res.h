// CPU implementation of kernels/attn_res.h (f32 storage, double accumulation of the norms and dot
// products; the CUDA kernels' reference). Arguments are validated by the dispatcher.
#pragma once

#include <span>

#include "core/tensor_view.h"

namespace ds::cpu {

void attn_res_mix(std::span<const float* const> sources, int64_t T, int64_t D, const float* query, float eps,
                  float* out);
void attn_res_block_scores(std::span<const float* const> blocks, int64_t T, int64_t D, const float* queries,
                           int64_t Q, float eps, float* m, float* s, float* o);
void attn_res_merge(int64_t j, int64_t T, int64_t D, const float* m, const float* s, const float* o,
                    const float* partial, const float* query, float eps, float* out);

}  // namespace ds::cpu
