// FFNs of the device forward (see device_model.h): GLU MLPs and the routed MoE.
#include <algorithm>

#include "gpu/forward_context.h"
#include "kernels/activation.h"
#include "kernels/elementwise.h"
#include "kernels/gather.h"
#include "kernels/moe.h"
#include "kernels/norm.h"
#include "layers/moe_router.h"

namespace ds {

void glu_forward(const ForwardContext& ctx, const DeviceGlu& g, const TensorView& x, const TensorView& y,
                 bool accumulate) {
  const int64_t rows = x.shape[0], I = g.intermediate();
  if (rows == 0) return;
  DevMat gate = ctx.mat(rows, I), up = ctx.mat(rows, I);
  ctx.proj(x, g.gate, gate.view());
  ctx.proj(x, g.up, up.view());
  if (ctx.cfg.act == Activation::Situ)
    situ_mul_rows(gate.view(), up.view(), gate.view(), ctx.cfg.situ_beta, ctx.cfg.situ_linear_beta);
  else
    silu_mul(gate.flat(), up.flat(), gate.flat());
  ctx.proj(gate.view(), g.down, y, accumulate);
}

namespace {

TensorView i32_view(const Buffer& b, int64_t n, Device d) {
  return TensorView::contiguous(b.data(), DType::I32, {n}, d);
}

// Routing, grouping, the experts and the combine on the device.
void moe_routed_on_device(const ForwardContext& ctx, const DeviceMoe& w, const TensorView& logits,
                          const TensorView& x, const TensorView& y) {
  const MoeConfig& mc = ctx.cfg.moe;
  const Device d = ctx.device;
  const int64_t T = ctx.T, E = mc.n_expert, k = mc.n_expert_per_token, n_rows = T * k;
  const Buffer expert(d, n_rows * 4), offsets(d, (E + 1) * 4), active(d, (E + 1) * 4),
      row_token(d, n_rows * 4), pos(d, n_rows * 4);
  DevMat weight = ctx.mat(T, k);
  MoeRouteArgs r;
  r.logits = logits;
  r.bias = w.bias_device;
  r.k = int(k), r.renormalize = mc.renormalize, r.scaling = mc.routed_scaling;
  r.expert = TensorView::contiguous(expert.data(), DType::I32, {T, k}, d);
  r.weight = weight.flat();
  moe_route(r);
  const MoeGroups g{i32_view(offsets, E + 1, d), i32_view(active, E + 1, d), i32_view(row_token, n_rows, d),
                    i32_view(pos, n_rows, d)};
  moe_group(r.expert, E, g);
  DevMat yg = ctx.mat(n_rows, x.shape[1]);
  if (T <= kMoeGroupedMaxTokens) {
    DevMat h = ctx.mat(n_rows, w.grouped.I);
    moe_grouped_glu(x, w.grouped, g, h.view(), yg.view());
  } else {
    const std::vector<int32_t> start = offsets.to_host<int32_t>();
    DevMat xg = ctx.mat(n_rows, x.shape[1]);
    gather_rows(x, g.row_token, xg.view());
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = start[size_t(e)], cnt = start[size_t(e) + 1] - r0;
      if (cnt > 0) glu_forward(ctx, w.experts[size_t(e)], xg.rows_view(r0, cnt), yg.rows_view(r0, cnt));
    }
  }
  weighted_combine_rows(yg.view(), TensorView::contiguous(pos.data(), DType::I32, {T, k}, d), weight.flat(),
                        y);
}

}  // namespace

bool moe_on_device(const ForwardContext& ctx, const DeviceMoe& w) {
  return ctx.device_moe && w.grouped.ptrs != nullptr && w.latent_down.data == nullptr &&
         ctx.cfg.act == Activation::Silu;
}

void moe_forward(const ForwardContext& ctx, const DeviceMoe& w, const TensorView& x, const TensorView& y) {
  const MoeConfig& mc = ctx.cfg.moe;
  const int64_t T = ctx.T, E = mc.n_expert;
  DevMat logits = ctx.mat(T, E);
  ctx.proj(x, w.router, logits.view());
  if (moe_on_device(ctx, w)) {
    moe_routed_on_device(ctx, w, logits.view(), x, y);
    if (w.shared) glu_forward(ctx, *w.shared, x, y, /*accumulate=*/true);
    return;
  }
  const std::vector<float> host_logits = logits.buf.to_host<float>();
  const MoeRouting r = route_sigmoid_topk(mc, w.bias, host_logits.data(), T);
  // Rows grouped by expert (token order inside a group): perm[row] = token, pos[t, j] = row.
  const int64_t k = r.k, n_rows = T * k;
  std::vector<int64_t> start(size_t(E) + 1, 0);
  for (int32_t e : r.expert) ++start[size_t(e) + 1];
  for (int64_t e = 0; e < E; ++e) start[size_t(e) + 1] += start[size_t(e)];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int32_t> perm(static_cast<size_t>(n_rows)), pos(static_cast<size_t>(n_rows));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t row = fill[size_t(r.expert[size_t(t * k + j)])]++;
      perm[size_t(row)] = int32_t(t);
      pos[size_t(t * k + j)] = int32_t(row);
    }
  const Buffer d_perm = Buffer::from_host<int32_t>(ctx.device, perm);
  const Buffer d_pos = Buffer::from_host<int32_t>(ctx.device, pos);
  const Buffer d_weight = Buffer::from_host<float>(ctx.device, r.weight);
  const bool latent = w.latent_down.data != nullptr;
  const int64_t width = latent ? w.latent_down.rows : ctx.cfg.hidden;
  DevMat z;
  if (latent) {
    z = ctx.mat(T, width);
    ctx.proj(x, w.latent_down, z.view());
  }
  const TensorView zin = latent ? z.view() : x;
  DevMat zg = ctx.mat(n_rows, width), yg = ctx.mat(n_rows, width);
  gather_rows(zin, ctx.i32(d_perm, n_rows), zg.view());
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = start[size_t(e)], cnt = start[size_t(e) + 1] - r0;
    if (cnt > 0) glu_forward(ctx, w.experts[size_t(e)], zg.rows_view(r0, cnt), yg.rows_view(r0, cnt));
  }
  const TensorView pos_v = TensorView::contiguous(d_pos.data(), DType::I32, {T, k}, ctx.device);
  const TensorView w_v = TensorView::contiguous(d_weight.data(), DType::F32, {T, k}, ctx.device);
  if (latent) {
    DevMat u = ctx.mat(T, width);
    weighted_combine_rows(yg.view(), pos_v, w_v, u.view());
    if (w.latent_norm.data != nullptr) rmsnorm(u.view(), w.latent_norm, ctx.cfg.rms_norm_eps, u.view());
    ctx.proj(u.view(), w.latent_up, y);
  } else {
    weighted_combine_rows(yg.view(), pos_v, w_v, y);
  }
  if (w.shared) glu_forward(ctx, *w.shared, x, y, /*accumulate=*/true);
}

}  // namespace ds
