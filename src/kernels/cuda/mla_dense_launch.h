// Internal to src/kernels/cuda: launches of the tensor-core MLA prefill's own kernels (mla_dense.cu).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace ds::cuda {

// One sequence's first L latent rows: K bf16 [L, R + dr] (row stride ldk; 0: R + dr), Vt bf16 [R, ldv]
// (columns 0 .. L - 1; nullptr: not written).
struct MlaDenseGather {
  const float* pool;
  int64_t page_tokens;
  int R, dr;
  const int32_t* page_table;  // the sequence's page ids
  int64_t L;
  __nv_bfloat16* K;
  __nv_bfloat16* Vt;
  int64_t ldv;
  int64_t ldk = 0;
};
void launch_mla_dense_gather(const MlaDenseGather& g);

// Q bf16 [H, T, R + dr] from q̂ f32 [T, H*R] (row stride qhs) and q_pe (row stride qps, head stride qph).
struct MlaDenseQ {
  const float* q_hat;
  int64_t qhs;
  const float* q_pe;
  int64_t qps, qph;
  int H, R, dr;
  int64_t T;
  __nv_bfloat16* Q;
};
void launch_mla_dense_pack_q(const MlaDenseQ& q);

// heads x rows score rows S f32 (row stride ld, head h at h * rows * ld) -> probabilities P bf16 of the
// same layout over columns [0, cols); row r attends to columns 0 .. pos0 + r.
struct MlaDenseSoftmax {
  const float* S;
  __nv_bfloat16* P;
  int64_t rows, cols, ld, pos0;
  float scale;
};
void launch_mla_dense_softmax(const MlaDenseSoftmax& s, int heads);

}  // namespace ds::cuda
