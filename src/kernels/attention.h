// Causal softmax attention for one sequence over a cached prefix (MLA prefill, non-absorbed form),
// one interface for every device: queries are the n_q newest positions, keys/values cover all n_kv
// positions, so query i sees keys [0, n_kv − n_q + i].
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor_view.h"

namespace ds {

struct AttnDims {
  int64_t n_q = 0;   // new query tokens
  int64_t n_kv = 0;  // key/value positions (>= n_q; the first n_kv − n_q are the cached prefix)
  int64_t H = 0;     // heads (keys/values per head: no grouping)
  int64_t Dk = 0;    // q/k head dim
  int64_t Dv = 0;    // v head dim
};

// q f32 [n_q, H*Dk], k f32 [n_kv, H*Dk], v f32 [n_kv, H*Dv], o f32 [n_q, H*Dv] (row views).
// o[i,h] = Σ_j softmax_j(scale · q[i,h]·k[j,h]) v[j,h] over j <= n_kv − n_q + i.
void attention_causal(const AttnDims& d, const TensorView& q, const TensorView& k, const TensorView& v,
                      float scale, const TensorView& o);

// ---- absorbed MLA decode attention (host memory, CPU) -------------------------------------------
// Per sequence, query i of its n_q newest positions (it sees the latent rows t <= n_kv − n_q + i)
// and head h, over the cached latent rows c_t = [c_t (R) ; k_pe_t (dr)]:
//   q̂ = W_UK,hᵀ q_nope;  s_t = scale · (q̂ · c_t + q_pe · k_pe_t);  p = softmax(s);
//   o = W_UV,h Σ_t p_t c_t
// with W_UK,h [dn, R] and W_UV,h [dv, R] the head's rows of kv_b_proj as f32 [H, dn + dv, R]
// (DeepSeek-V2's weight absorption: the keys and values are never expanded).
struct LatentAttnShape {
  int64_t H = 0;   // heads
  int64_t dn = 0;  // qk_nope_head_dim
  int64_t dr = 0;  // qk_rope_head_dim (k_pe width)
  int64_t dv = 0;  // v_head_dim
  int64_t R = 0;   // kv_lora_rank
};

// One sequence's latent rows, possibly paged: row t at
// base + (pages[t / page_rows] · page_rows + t % page_rows) · row_stride; no pages: base + t · row_stride.
struct LatentRows {
  const float* base = nullptr;
  std::span<const int32_t> pages;
  int64_t page_rows = 1;
  int64_t row_stride = 0;  // floats, >= R + dr
  const float* row(int64_t t) const {
    if (pages.empty()) return base + t * row_stride;
    return base + (int64_t(pages[size_t(t / page_rows)]) * page_rows + t % page_rows) * row_stride;
  }
};

struct LatentAttnSeq {
  const float* q = nullptr;  // f32 [n_q, H·(dn + dr)], rows q_stride apart
  int64_t q_stride = 0;
  float* o = nullptr;  // f32 [n_q, H·dv], rows o_stride apart (overwritten)
  int64_t o_stride = 0;
  int64_t n_q = 0;   // new queries (>= 1)
  int64_t n_kv = 0;  // latent rows, the queries' own included (>= n_q)
  LatentRows kv;
};

// Every sequence and head in one call (on the CPU: one parallel region over sequences × heads).
// w_kv_b f32 [H, dn + dv, R]. Throws ds::Error on inconsistent sizes.
void latent_attention(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                      float scale);

}  // namespace ds
