// MLA prefill attention in the expanded (non-absorbed) form, for long chunks of one sequence: the
// sequence's latents are gathered once as bf16 rows, expanded per head by kv_b_proj into keys and
// values (k_nope, v = c · W_kv_bᵀ: the caller's product), and each head attends with head width
// dn + dr (keys [k_nope ; k_pe], k_pe shared by the heads) and value width dv:
//   o_h(i) = Σ_{t <= p0 + i} softmax_t(scale · [q_nope ; q_pe]_h(i) · [k_nope,h(t) ; k_pe(t)]) v_h(t)
// It is the same function as the absorbed form (kernels/mla_attention.h followed by W_UV) with
// 2·(dn + dr + dv) instead of 2·(2R + dr) FLOPs per score and head (3.4× fewer at R = 512, dn = dv =
// 128, dr = 64). CUDA: one flash-style kernel (scores and probabilities stay in registers; bf16
// operands, f32 accumulation and softmax); the CPU runs plain loops (the reference).
#pragma once

#include <cstdint>

#include "core/tensor_view.h"
#include "kernels/mla_attention.h"

namespace ds {

// Head widths the CUDA kernel is built for: (dn, dr, dv) = (128, 64, 128) (Kimi Linear, K3) and
// (64, 32, 64) (the test models).
bool mla_expanded_supported(int64_t dn, int64_t dr, int64_t dv);

// The first L latent rows of one sequence (its pages listed from entry page_off of p.page_table), as
// bf16 [c ; k_pe] rows: out bf16 [L, R + dr] row view on p's device.
void mla_gather_latents(const MlaPagedLatents& p, int64_t page_off, int64_t L, const TensorView& out);

// Pipeline of the CUDA kernel at Kimi's widths (192 + 128; the other widths have one form): key/value
// blocks copied 1, 2 or 3 blocks ahead of their use with the queries in shared memory (SmemQ*), or with
// the queries as register A fragments of the scores (RegQ*); every form but SmemQ1 skips the rescale of
// the output accumulators where no row of a warp got a new max (SmemQ1Lazy: SmemQ1 with that alone).
// SmemQ1N96: SmemQ1 with blocks of 96 keys instead of 64. Auto: SmemQ1N96 (the fastest measured on
// the H200: docs/perf.md, prefill round 7), or the form DS_MLA_FLASH_FORM names. The same values from
// every form up to the order of the f32 sums.
enum class MlaFlashForm { Auto, SmemQ1, SmemQ1Lazy, SmemQ2, SmemQ3, RegQ1, RegQ2, RegQ4, SmemQ1N96 };

struct MlaExpandedArgs {
  int64_t H = 0, dn = 0, dr = 0, dv = 0;
  TensorView q;     // f32 [T, H*(dn+dr)] row view: head h's q_nope at columns h*(dn+dr), its q_pe after it
  TensorView kv;    // bf16 [p0 + T, H*(dn+dv)] row view: head h's k_nope at columns h*(dn+dv), its v after it
  TensorView k_pe;  // bf16 [p0 + T, dr] row view (shared by the heads)
  int64_t p0 = 0;   // position of q's first row; row i attends to key rows 0 .. p0 + i
  float scale = 0.0f;
  TensorView o;  // f32 [T, H*dv] out: head h at columns h*dv
  MlaFlashForm form = MlaFlashForm::Auto;
};
void mla_attention_expanded(const MlaExpandedArgs& a);

}  // namespace ds
