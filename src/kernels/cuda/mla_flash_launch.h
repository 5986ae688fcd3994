// Internal to src/kernels: launch of the flash-style MLA prefill kernel (kernels/mla_prefill.h
// mla_attention_expanded) over device pointers; strides in elements. Default stream.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace ds::cuda {

struct MlaFlashLaunch {
  const float* q;  // f32 [T, H*(dn+dr)]
  int64_t q_stride;
  const __nv_bfloat16* kv;  // bf16 [p0 + T, H*(dn+dv)]
  int64_t kv_stride;
  const __nv_bfloat16* k_pe;  // bf16 [p0 + T, dr]
  int64_t k_pe_stride;
  float* o;  // f32 [T, H*dv]
  int64_t o_stride;
  int H, dn, dr, dv;
  int64_t T, p0;
  float scale;
};
// One CTA per (block of 128 query rows, head), 8 warps of 16 rows; key blocks of 64 through shared
// memory (cp.async; three stages for wgmma, two for mma.sync); bf16 tensor-core products (wgmma for
// dn + dr = 192, dv = 128) with the scores, the online softmax and the probabilities in registers.
// Head widths (dn, dr, dv) of mla_expanded_supported.
void launch_mla_flash(const MlaFlashLaunch& l);

}  // namespace ds::cuda
