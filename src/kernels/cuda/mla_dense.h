// CUDA side of kernels/mla_attention.h mla_attention_dense (mla_dense.cpp): the tensor-core MLA
// prefill of one sequence's run of T new tokens at positions p0 .. p0 + T - 1.
#pragma once

#include <cstdint>

namespace ds::cuda {

struct MlaDenseArgs {
  const float* pool;  // one layer's latent pool f32 [pages, page_tokens, R + dr]
  int64_t page_tokens;
  const int32_t* page_table;  // the sequence's page ids (device)
  int64_t H, R, dr, T, p0;
  const float* q_hat;  // f32 [T, H*R]
  int64_t q_hat_stride;
  const float* q_pe;  // head h's dr values at q_pe + h * q_pe_head_stride of each row
  int64_t q_pe_stride, q_pe_head_stride;
  float scale;
  float* ctx;  // f32 [T, H*R]
  int64_t ctx_stride;
  int64_t scratch_bytes;  // scores + probabilities at a time (at least one head of one row block)
};
void mla_attention_dense(const MlaDenseArgs& a);

}  // namespace ds::cuda
