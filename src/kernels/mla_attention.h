// MLA attention in the absorbed form over a paged latent pool (one interface for every device).
// The pool of one layer holds per token the entry [c ; k_pe] (R + dr f32 values: the normalised
// latent and the shared, unrotated key part) in pages of page_tokens rows; each sequence finds its
// pages through a page table. Tokens of several sequences are packed along T; token i belongs to
// sequence tok_seq[i] at absolute position tok_pos[i] and attends causally to positions
// [0, tok_pos[i]] of its own sequence:
//   score_t = scale · (q̂ · c_t + q_pe · k_pe_t),  ctx = Σ_t softmax(score)_t c_t
// with q̂ = W_UKᵀ q_nope per head (the caller's products; o = W_UV ctx likewise).
#pragma once

#include <cstdint>

#include "core/tensor_view.h"

namespace ds {

// Where token rows live. All index views I32 contiguous on the pool's device.
struct MlaPagedLatents {
  float* pool = nullptr;    // f32 [n_pages, page_tokens, R + dr] (one layer)
  int64_t n_pages = 0;      // pages in the pool (page ids are checked on the CPU only)
  int64_t page_tokens = 0;  // rows per page
  int64_t R = 0, dr = 0;    // latent width, k_pe width
  TensorView page_table;    // I32 [sum of the sequences' page counts]
  TensorView page_offset;   // I32 [N]: first entry of sequence n in page_table
  TensorView tok_seq;       // I32 [T]
  TensorView tok_pos;       // I32 [T]
  Device device = Device::Cpu;
};

// Writes the entries of the T tokens: row tok_pos[i] of sequence tok_seq[i] <- [c[i] ; k_pe[i]].
// c f32 [T, R], k_pe f32 [T, dr] row views.
void mla_write_latents(const MlaPagedLatents& p, const TensorView& c, const TensorView& k_pe);

// q_hat f32 [T, H*R] (head h at columns h*R), q_pe f32 rows with head h's dr values at column
// q_pe_col + h*q_pe_head_stride of a row view [T, ...]; ctx f32 [T, H*R] out.
struct MlaAttentionArgs {
  int64_t H = 0;
  TensorView q_hat;
  TensorView q_pe;  // row view over the full q [T, H*dq]
  int64_t q_pe_col = 0, q_pe_head_stride = 0;
  float scale = 0.0f;
  TensorView ctx;
  // CUDA: the score and context products with bf16 operands on the tensor cores (f32 accumulation
  // and softmax; about 1e-3 relative error) where the shape allows; false: f32 throughout. The CPU
  // (the reference) ignores it.
  bool bf16_products = false;
};

void mla_attention(const MlaPagedLatents& p, const MlaAttentionArgs& a);

// mla_attention for T tokens of one sequence at consecutive positions p0 .. p0 + T - 1 (the rows of
// a's views; the sequence's pages listed from entry `page_off` of p.page_table), through matrix
// products on the tensor cores: the sequence's first p0 + T latent rows gathered as bf16, per head
// the scores [q̂ ; q_pe] · [c ; k_pe]ᵀ as one product per block of query rows (keys past the block's
// last position skipped), a causal softmax in f32, ctx = P · C as a second product (bf16 operands,
// f32 accumulation: about 1e-3 relative error). Scratch of about `scratch_bytes` for the scores at a
// time (at least one head of one block). CUDA; on the CPU it is mla_attention (the reference; p's
// tok_seq / tok_pos must then describe these T tokens). Prefill chunks of at least
// kMlaDenseMinTokens tokens are where it pays.
constexpr int64_t kMlaDenseMinTokens = 256;
void mla_attention_dense(const MlaPagedLatents& p, const MlaAttentionArgs& a, int64_t page_off, int64_t p0,
                         int64_t scratch_bytes = int64_t(2) << 30);

}  // namespace ds
