// MLA mixer of the device forward (see device_model.h): attention over the paged latents, absorbed
// (decode, short chunks) or expanded per head (long bf16 CUDA prefill chunks: kernels/mla_prefill.h).
#include <cmath>
#include <vector>

#include "gpu/forward_context.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/mla_attention.h"
#include "kernels/mla_prefill.h"
#include "kernels/norm.h"

namespace ds {
namespace {

constexpr float kLatentNormEps = 1e-6f;  // HF KimiRMSNorm default (kv_a_layernorm, q_a_layernorm)

// The absorbed form: q̂_h = W_UK,hᵀ q_nope,h, attention over the latents (per sequence through the
// tensor cores where is_dense, else the absorbed kernel over runs of rows), o_h = W_UV,h ctx_h. The
// heads' W_UKᵀ are R*dn elements apart, W_UV,h (rows of kv_b_proj) (dn + dv)*R apart.
template <class IsDense>
void absorbed_attention(const ForwardContext& ctx, const DeviceMla& w, const MlaPagedLatents& paged,
                        const DevMat& q, float scale, const IsDense& is_dense, const DevMat& o) {
  const MlaConfig& m = ctx.cfg.mla;
  const int64_t T = ctx.T, H = m.n_head, dq = m.qk_head_dim(), dn = m.qk_nope_head_dim;
  const int64_t dv = m.v_head_dim, R = m.kv_lora_rank;
  DevMat qhat = ctx.mat(T, H * R), cx = ctx.mat(T, H * R);
  if (ctx.batched_heads)
    ctx.proj_heads(q.view(), 0, dn, w.uk_t[0], qhat.cols_view(0, R), H, {dq, R * dn, R});
  else
    for (int64_t h = 0; h < H; ++h)
      ctx.proj(q.cols_view(h * dq, dn), w.uk_t[size_t(h)], qhat.cols_view(h * R, R));
  MlaAttentionArgs a;
  a.H = H;
  a.q_hat = qhat.view();
  a.q_pe = q.view(), a.q_pe_col = dn, a.q_pe_head_stride = dq;
  a.scale = scale;
  a.ctx = cx.view();
  a.bf16_products = ctx.mma_mla && ctx.device == Device::Cuda && ctx.w.precision == Precision::BF16;
  auto rows_of = [&](MlaAttentionArgs as, int64_t r0, int64_t n) {
    as.q_hat = qhat.rows_view(r0, n), as.q_pe = q.rows_view(r0, n), as.ctx = cx.rows_view(r0, n);
    return as;
  };
  for (int s = 0; s < ctx.N;) {
    const int64_t r0 = ctx.cu[size_t(s)];
    if (is_dense(s)) {
      mla_attention_dense(paged, rows_of(a, r0, ctx.cu[size_t(s) + 1] - r0), ctx.page_off[size_t(s)],
                          ctx.n_past[size_t(s)]);
      ++s;
      continue;
    }
    int e = s + 1;
    while (e < ctx.N && !is_dense(e)) ++e;
    const int64_t n = ctx.cu[size_t(e)] - r0;
    if (s == 0 && e == ctx.N) {
      mla_attention(paged, a);
    } else {
      MlaPagedLatents ps = paged;  // tok_seq keeps the step's sequence numbers: page_offset is shared
      ps.tok_seq =
          TensorView::contiguous(static_cast<int32_t*>(paged.tok_seq.data) + r0, DType::I32, {n}, ctx.device);
      ps.tok_pos =
          TensorView::contiguous(static_cast<int32_t*>(paged.tok_pos.data) + r0, DType::I32, {n}, ctx.device);
      mla_attention(ps, rows_of(a, r0, n));
    }
    s = e;
  }
  if (ctx.batched_heads)
    ctx.proj_heads(cx.view(), 0, R, w.uv[0], o.cols_view(0, dv), H, {R, (dn + dv) * R, dv});
  else
    for (int64_t h = 0; h < H; ++h)
      ctx.proj(cx.cols_view(h * R, R), w.uv[size_t(h)], o.cols_view(h * dv, dv));
}

// The expanded form, per sequence (a long prefill chunk): its p0 + T latent rows gathered as bf16
// [c ; k_pe], keys and values of every head as one product kv = c · W_kv_bᵀ (bf16 [p0 + T, H*(dn+dv)]),
// then the flash-style attention straight into o (no q̂, no W_UV product).
void mla_expanded_prefill(const ForwardContext& ctx, const DeviceMla& w, const MlaPagedLatents& paged,
                          const DevMat& q, float scale, const DevMat& o) {
  const MlaConfig& m = ctx.cfg.mla;
  const int64_t H = m.n_head, dn = m.qk_nope_head_dim, dr = m.qk_rope_head_dim, dv = m.v_head_dim;
  const int64_t R = m.kv_lora_rank, E = R + dr, W = H * (dn + dv);
  const Device d = ctx.device;
  for (int s = 0; s < ctx.N; ++s) {
    const int64_t r0 = ctx.cu[size_t(s)], T = ctx.cu[size_t(s) + 1] - r0, L = ctx.n_past[size_t(s)] + T;
    const Buffer lat(d, L * E * 2), kv(d, L * W * 2);
    auto* lp = lat.as<uint16_t>();
    mla_gather_latents(paged, ctx.page_off[size_t(s)], L, TensorView::matrix(lp, DType::BF16, L, E, E, d));
    const TensorView kvv = TensorView::matrix(kv.data(), DType::BF16, L, W, W, d);
    linear(TensorView::matrix(lp, DType::BF16, L, R, E, d), w.kv_b, kvv);
    MlaExpandedArgs a;
    a.H = H, a.dn = dn, a.dr = dr, a.dv = dv;
    a.q = q.rows_view(r0, T);
    a.kv = kvv;
    a.k_pe = TensorView::matrix(lp + R, DType::BF16, L, dr, E, d);
    a.p0 = ctx.n_past[size_t(s)];
    a.scale = scale;
    a.o = o.rows_view(r0, T);
    mla_attention_expanded(a);
  }
}

}  // namespace

void mla_mixer(const ForwardContext& ctx, const DeviceMla& w, int mla_layer, const TensorView& n,
               const TensorView& y) {
  const MlaConfig& m = ctx.cfg.mla;
  const int64_t T = ctx.T, H = m.n_head, dq = m.qk_head_dim(), dn = m.qk_nope_head_dim;
  const int64_t dr = m.qk_rope_head_dim, dv = m.v_head_dim, R = m.kv_lora_rank;
  DevMat q = ctx.mat(T, H * dq), qa, g;
  DevMat c = ctx.mat(T, R), kpe = ctx.mat(T, dr);
  // Every projection of the normed input at once (one launch at batch 1).
  std::vector<FewRowsJob> first;
  if (m.q_lora_rank > 0) {
    qa = ctx.mat(T, m.q_lora_rank);
    first.push_back({w.q_a, qa.view()});
  } else {
    first.push_back({w.q, q.view()});
  }
  first.push_back({w.kv_a_c, c.view()});
  first.push_back({w.kv_a_pe, kpe.view()});
  if (w.g.data != nullptr) {
    g = ctx.mat(T, H * dv);
    first.push_back({w.g, g.view()});
  }
  ctx.proj_many(n, first);
  if (m.q_lora_rank > 0) {
    rmsnorm(qa.view(), w.q_a_norm, kLatentNormEps, qa.view());
    ctx.proj(qa.view(), w.q_b, q.view());
  }
  rmsnorm(c.view(), w.kv_a_norm, kLatentNormEps, c.view());
  const MlaPagedLatents paged = ctx.paged(mla_layer);
  mla_write_latents(paged, c.view(), kpe.view());
  DevMat o = ctx.mat(T, H * dv);
  const float scale = 1.0f / std::sqrt(float(dq));
  // bf16 CUDA prefill: each sequence of at least kMlaDenseMinTokens new tokens through the tensor
  // cores, each run of consecutive shorter ones (decode tokens of a mixed step) through the absorbed
  // kernel over just their rows; the choice depends on a sequence's own chunk, not on its batch. A
  // step whose sequences are all such chunks takes the expanded form (flash_mla) where it is built.
  const bool dense_ok =
      ctx.dense_mla && ctx.device == Device::Cuda && ctx.w.precision == Precision::BF16 && !ctx.decode;
  auto is_dense = [&](int s) {
    return dense_ok && ctx.cu[size_t(s) + 1] - ctx.cu[size_t(s)] >= kMlaDenseMinTokens;
  };
  bool expanded = ctx.flash_mla && w.kv_b.data != nullptr && w.kv_b.dtype == DType::BF16 &&
                  mla_expanded_supported(dn, dr, dv);
  for (int s = 0; s < ctx.N; ++s) expanded = expanded && is_dense(s);
  if (expanded) {
    mla_expanded_prefill(ctx, w, paged, q, scale, o);
  } else {
    absorbed_attention(ctx, w, paged, q, scale, is_dense, o);
  }
  if (w.g.data != nullptr) mul_sigmoid_rows(g.view(), o.view());
  ctx.proj(o.view(), w.o, y);
}

}  // namespace ds
