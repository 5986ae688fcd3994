// MLA mixer of the device forward (see device_model.h): absorbed attention over the paged latents.
#include <cmath>

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
  DevMat q = ctx.mat(T, H * dq);
  if (m.q_lora_rank > 0) {
    DevMat qa = ctx.mat(T, m.q_lora_rank);
    ctx.proj(n, w.q_a, qa.view());
    rmsnorm(qa.view(), w.q_a_norm, kLatentNormEps, qa.view());
    ctx.proj(qa.view(), w.q_b, q.view());
  } else {
    ctx.proj(n, w.q, q.view());
  }
  DevMat c = ctx.mat(T, R), kpe = ctx.mat(T, dr);
  ctx.proj(n, w.kv_a_c, c.view());
  ctx.proj(n, w.kv_a_pe, kpe.view());
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
  mla_attention(paged, a);
  if (ctx.batched_heads)
    ctx.proj_heads(cx.view(), 0, R, w.uv[0], o.cols_view(0, dv), H, {R, (dn + dv) * R, dv});
  else
    for (int64_t h = 0; h < H; ++h)
      ctx.proj(cx.cols_view(h * R, R), w.uv[size_t(h)], o.cols_view(h * dv, dv));
  if (w.g.data != nullptr) {
    DevMat g = ctx.mat(T, H * dv);
    ctx.proj(n, w.g, g.view());
    mul_sigmoid_rows(g.view(), o.view());
  }
  ctx.proj(o.view(), w.o, y);
}

}  // namespace ds
