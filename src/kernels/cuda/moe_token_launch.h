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
  // MXFP4 experts: [3E] E8M0 scales u8 [rows, cols/32] (ptrs: codes [rows, cols/2])
  const void* const* scales = nullptr;
  bool situ = false;  // SiTU-GLU (beta, linear_beta) instead of SiLU-GLU
  float beta = 0.0f, linear_beta = 0.0f;
  float* h;  // [T * (k + shared), I], rows h_stride apart
  int64_t h_stride;
  float* y;  // [T, D]
  int64_t y_stride;
  bool accumulate;
};
// gate/up: one warp per 2 intermediate rows of one (token, expert) term; down: one warp per
// (token, output row), summing the token's k weighted terms and the shared expert's.
void launch_moe_token_glu(const TokenGluLaunch& l);
// The same for MXFP4 experts (scales set, no shared expert; D and I multiples of 32): codes and
// scales streamed, decoded to f32 in registers (moe_token_mxfp4.cu).
void launch_moe_token_glu_mxfp4(const TokenGluLaunch& l);

}  // namespace ds::cuda
