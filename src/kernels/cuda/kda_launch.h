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
  bool overlap_prior_kernel = false;  // KdaDecodeArgs::overlap_prior_kernel
};

void launch_kda_prefill(const KdaPrefillLaunch& l);
// Decode. launch_kda_decode runs the form named by env DS_KDA_DECODE, else cols-hf-pdl (the fastest
// measured; kda_decode.cu):
//   rows         state rows split over warps, state in registers (kda_decode.cu, the plain form);
//   cols         value columns per warp, state in registers (kda_decode_cols.cu);
//   cols-smem4, cols-smem5  the same with half the state rows in shared memory (4 / 5 CTAs per SM);
//   cl4          a cluster of 4 CTAs per (sequence, head), 32 value columns each (kda_decode_cluster.cu);
//   auto         cl4 where B · H is below the number of multiprocessors, else cols-hf;
// with suffixes -pf (L2 prefetch of the state of the CTA one residency later in launch order),
// -hf (heads first in launch order: the CTAs of one sequence run together) and -pdl (programmatic
// dependent launch on a non-null stream: the CTAs start while the previous kernel finishes and wait
// for it before reading its outputs; the state loads too unless overlap_prior_kernel), e.g.
// cols-smem5-pf-hf, cols-hf-pdl, cl4-pdl, auto-pdl (the cluster form is always heads first).
// The column and cluster forms need conv size 4; other sizes take the rows form.
struct KdaDecodeForm {
  bool cols = false;
  bool cluster = false;    // cl4
  bool automatic = false;  // auto: cluster or cols-hf by B · H, at launch
  int smem_ctas = 0;       // 0: whole state in registers (3 CTAs per SM); 4 or 5: half in shared memory
  bool prefetch = false, heads_first = false, pdl = false;
};
KdaDecodeForm parse_kda_decode_form(const char* name);  // nullptr or unknown: the default
void launch_kda_decode(const KdaDecodeLaunch& l);
bool kda_decode_cols_supported(const KdaDecodeLaunch& l);  // also the cluster form's condition
void launch_kda_decode_cols(const KdaDecodeLaunch& l, const KdaDecodeForm& form);     // form.cols
void launch_kda_decode_cluster(const KdaDecodeLaunch& l, const KdaDecodeForm& form);  // form.cluster

}  // namespace ds::cuda
