// Internal to src/kernels: the CUDA launcher of moe_token_glu (kernels/moe_token.h).
#pragma once

#include <cstdint>

namespace ds::cuda {

struct TokenGluLaunch {
  const float* x;  // [T, D], rows x_stride apart
  int64_t x_stride;
  const int32_t* expert;  // [T, k]
  const float* weight;    // [T, k]
  int64_t T, k;
  const void* const* ptrs;  // [3E]: gate, up, down
  int64_t E, I, D;
  const void *shared_gate, *shared_up, *shared_down;  // [I, D], [I, D], [D, I], or all nullptr
  bool bf16;
  float* h;  // [T * (k + shared), I], rows h_stride apart
  int64_t h_stride;
  float* y;  // [T, D]
  int64_t y_stride;
  bool accumulate;
};
// gate/up: one warp per 2 intermediate rows of one (token, expert) term; down: one warp per
// (token, output row), summing the token's k weighted terms and the shared expert's.
void launch_moe_token_glu(const TokenGluLaunch& l);

}  // namespace ds::cuda
