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
  // wgmma kernel (dn + dr = 192, dv = 128) only: key/value blocks copied `ahead` blocks before their use
  // (1, 2 or 3 with the queries in shared memory; 1, 2 or 4 with q_regs), the queries as register A
  // fragments of the scores (q_regs) instead of a shared-memory operand; the rescale of the output
  // accumulators skipped where no row of a warp got a new max (lazy_rescale: every form but the first).
  // key_block 96: blocks of 96 keys (scores by m64n96k16; queries in shared memory, 1 ahead, no lazy
  // rescale); else 64.
  int ahead = 1, key_block = 64;
  bool q_regs = false, lazy_rescale = false;
};
// One CTA per (block of 128 query rows, head), 8 warps of 16 rows; key blocks of 64 (96: key_block)
// through shared memory (cp.async, `ahead` blocks ahead on wgmma, one on mma.sync); bf16 tensor-core products
// (wgmma for dn + dr = 192, dv = 128) with the scores, the online softmax and the probabilities in registers.
// Head widths (dn, dr, dv) of mla_expanded_supported.
void launch_mla_flash(const MlaFlashLaunch& l);

}  // namespace ds::cuda
