// MLA mixer of the device forward (see device_model.h): absorbed attention over the paged latents.
#include <cmath>
#include <vector>

#include "gpu/forward_context.h"
#include "kernels/elementwise.h"
#include "kernels/mla_attention.h"
#include "kernels/norm.h"

namespace ds {
namespace {

constexpr float kLatentNormEps = 1e-6f;  // HF KimiRMSNorm default (kv_a_layernorm, q_a_layernorm)

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
  DevMat qhat = ctx.mat(T, H * R), cx = ctx.mat(T, H * R), o = ctx.mat(T, H * dv);
  // q̂_h = W_UK,hᵀ q_nope,h: the heads' W_UKᵀ are R*dn elements apart, W_UV,h (rows of kv_b_proj)
  // (dn + dv)*R apart.
  if (ctx.batched_heads)
    ctx.proj_heads(q.view(), 0, dn, w.uk_t[0], qhat.cols_view(0, R), H, {dq, R * dn, R});
  else
    for (int64_t h = 0; h < H; ++h)
      ctx.proj(q.cols_view(h * dq, dn), w.uk_t[size_t(h)], qhat.cols_view(h * R, R));
  MlaAttentionArgs a;
  a.H = H;
  a.q_hat = qhat.view();
  a.q_pe = q.view(), a.q_pe_col = dn, a.q_pe_head_stride = dq;
  a.scale = 1.0f / std::sqrt(float(dq));
  a.ctx = cx.view();
  a.bf16_products = ctx.mma_mla && ctx.device == Device::Cuda && ctx.w.precision == Precision::BF16;
  // bf16 CUDA prefill: each sequence of at least kMlaDenseMinTokens new tokens through the tensor
  // cores, each run of consecutive shorter ones (decode tokens of a mixed step) through the absorbed
  // kernel over just their rows; the choice depends on a sequence's own chunk, not on its batch.
  const bool dense_ok =
      ctx.dense_mla && ctx.device == Device::Cuda && ctx.w.precision == Precision::BF16 && !ctx.decode;
  auto is_dense = [&](int s) {
    return dense_ok && ctx.cu[size_t(s) + 1] - ctx.cu[size_t(s)] >= kMlaDenseMinTokens;
  };
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
  if (w.g.data != nullptr) mul_sigmoid_rows(g.view(), o.view());
  ctx.proj(o.view(), w.o, y);
}

}  // namespace ds
