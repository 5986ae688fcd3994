// Internal to src/kernels/cuda: plain launch descriptions of the KDA kernels, so that the .cu files
// need no project headers (nvcc cannot compile fmt's C++20 headers). kernels/cuda/kda.cpp fills
// them from the validated kernels/kda.h arguments.
#pragma once

#include <cstdint>

namespace ds::cuda {

struct KdaPrefillLaunch {
  bool bf16 = true;                     // activations bf16 (else f32)
  int N = 0, H = 0;                     // K = V = 128
  const int64_t* cu_seqlens = nullptr;  // host [N + 1]
  const void *q, *k, *v, *f, *b;
  void* o;
  int64_t q_stride, k_stride, v_stride, f_stride, b_stride, o_stride;  // elements per row
  const float *a_log, *dt_bias;                                        // device f32 [H], [H*128]
  bool safe_gate = false;
  float lower_bound = 0.0f, scale = 0.0f;
  float* pool;
  int64_t slot_stride;
  const int32_t *initial_slot, *final_slot;  // host [N]
  int n_checkpoints = 0;
  const int32_t *ck_seq, *ck_slot;  // host [n_checkpoints]
  const int64_t* ck_after;          // host [n_checkpoints]
  void* stream = nullptr;
};

struct KdaDecodeLaunch {
  bool bf16 = true;
  int B = 0, H = 0, W = 0;  // K = V = 128
  const void *q, *k, *v, *f, *b, *r;
  void* y;
  int64_t q_stride, k_stride, v_stride, f_stride, b_stride, r_stride, y_stride;
  const float *taps, *o_norm, *a_log, *dt_bias;
  bool safe_gate = false;
  float lower_bound = 0.0f, scale = 0.0f, eps = 0.0f;
  float* pool;
  int64_t slot_stride;
  float* conv;
  int64_t conv_stride;
  const int32_t* slots;  // device [B]
  void* stream = nullptr;
};

void launch_kda_prefill(const KdaPrefillLaunch& l);
void launch_kda_decode(const KdaDecodeLaunch& l);

}  // namespace ds::cuda
