// FFNs of the device forward (see device_model.h): GLU MLPs and the routed MoE.
#include <algorithm>

#include "gpu/forward_context.h"
#include "kernels/activation.h"
#include "kernels/elementwise.h"
#include "kernels/gather.h"
#include "kernels/moe.h"
#include "kernels/moe_gemm.h"
#include "kernels/moe_token.h"
#include "kernels/norm.h"
#include "layers/moe_router.h"

namespace ds {

void glu_forward(const ForwardContext& ctx, const DeviceGlu& g, const TensorView& x, const TensorView& y,
                 bool accumulate) {
  const int64_t rows = x.shape[0], I = g.intermediate();
  if (rows == 0) return;
  DevMat gate = ctx.mat(rows, I), up = ctx.mat(rows, I);
  if (g.gate.is_mxfp4() || g.up.is_mxfp4()) {
    ctx.proj(x, g.gate, gate.view());
    ctx.proj(x, g.up, up.view());
  } else {
    const FewRowsJob jobs[] = {{g.gate.dense, gate.view()}, {g.up.dense, up.view()}};
    ctx.proj_many(x, jobs);
  }
  if (ctx.cfg.act == Activation::Situ) {
    situ_mul_rows(gate.view(), up.view(), gate.view(), ctx.cfg.situ_beta, ctx.cfg.situ_linear_beta);
    ctx.proj(gate.view(), g.down, y, accumulate);
  } else {
    glu_down(ctx, gate.view(), up.view(), g.down, y, accumulate);
  }
}

void glu_down(const ForwardContext& ctx, const TensorView& gate, const TensorView& up,
              const ExpertLinear& down, const TensorView& y, bool accumulate) {
  // One row on CUDA: the SiLU product formed inside the down GEMV (no elementwise launch). At 2 rows
  // the GLU GEMV's long rows (the dense MLP's 9216) stream at ~18% of the bandwidth: cuBLASLt there.
  if (ctx.few_row_gemv && ctx.device == Device::Cuda && gate.shape[0] == 1 && !down.is_mxfp4() &&
      linear_few_rows_fits(gate, down.dense) && linear_few_rows_fits(up, down.dense))
    return linear_few_rows_glu(gate, up, down.dense, y, accumulate);
  const auto flat = [](const TensorView& v) {  // the callers' scratch rows are contiguous
    return TensorView::contiguous(v.data, v.dtype, {v.shape[0] * v.shape[1]}, v.device);
  };
  silu_mul(flat(gate), flat(up), flat(gate));
  ctx.proj(gate, down, y, accumulate);
}

namespace {

TensorView i32_view(const Buffer& b, int64_t n, Device d) {
  return TensorView::contiguous(b.data(), DType::I32, {n}, d);
}

// The experts' GLU activation over f32 rows, in place into gate.
void act_rows(const ForwardContext& ctx, const TensorView& gate, const TensorView& up) {
  if (ctx.cfg.act == Activation::Situ)
    situ_mul_rows(gate, up, gate, ctx.cfg.situ_beta, ctx.cfg.situ_linear_beta);
  else
    silu_mul(gate, up, gate);
}

// Grouping, the experts and the combine on the device, after moe_route: y f32 [T, W] = Σ_j weight[t, j]
// · expert_{e[t, j]}(x[t]) with x f32 [T, W] (W: the experts' width, the hidden size or the latent).
void moe_grouped_on_device(const ForwardContext& ctx, const DeviceMoe& w, const MoeRouteArgs& r,
                           const TensorView& x, const TensorView& y) {
  const Device d = ctx.device;
  const GroupedExperts& gw = w.grouped;
  const int64_t T = ctx.T, E = gw.E, k = r.k, n_rows = T * k, D = gw.D, I = gw.I;
  const Buffer offsets(d, (E + 1) * 4), active(d, (E + 1) * 4), row_token(d, n_rows * 4), pos(d, n_rows * 4);
  const MoeGroups g{i32_view(offsets, E + 1, d), i32_view(active, E + 1, d), i32_view(row_token, n_rows, d),
                    i32_view(pos, n_rows, d)};
  moe_group(r.expert, E, g);
  DevMat yg = ctx.mat(n_rows, D);
  if (T <= kMoeGroupedMaxTokens && !gw.mxfp4() && !gw.act.situ) {
    DevMat h = ctx.mat(n_rows, I);
    moe_grouped_glu(x, gw, g, h.view(), yg.view());
  } else if (ctx.grouped_gemm && d == Device::Cuda && ctx.w.precision == Precision::BF16 &&
             moe_gemm_supported(gw)) {
    // Two launches over every expert: x cast to bf16 once (T rows, read in place through row_token),
    // the GLU formed inside the first GEMM and written as bf16, the down product in f32; MXFP4 experts
    // dequantised tile by tile inside both (mma.sync), bf16 ones on the warpgroup MMA (wgmma_moe).
    const Buffer xb(d, T * D * 2), hb(d, n_rows * I * 2);
    const TensorView xbv = TensorView::matrix(xb.data(), DType::BF16, T, D, D, d);
    const TensorView hbv = TensorView::matrix(hb.data(), DType::BF16, n_rows, I, I, d);
    cast_rows(x, xbv);
    const MoeGemmKernel kernel = ctx.wgmma_moe ? MoeGemmKernel::Auto : MoeGemmKernel::MmaSync;
    moe_gemm_glu(xbv, gw, g, hbv, kernel);
    moe_gemm_down(hbv, gw, g, yg.view(), kernel);
  } else {
    const std::vector<int32_t> start = offsets.to_host<int32_t>();
    DevMat xg = ctx.mat(n_rows, D);
    gather_rows(x, g.row_token, xg.view());
    // bf16 weights on CUDA: the gathered rows cast once for every expert's gate and up products.
    const bool bf16 = d == Device::Cuda && gw.dtype == DType::BF16;
    const Buffer xb(d, bf16 ? n_rows * D * 2 : 0);
    const TensorView xbv = TensorView::matrix(xb.data(), DType::BF16, bf16 ? n_rows : 0, D, D, d);
    if (bf16) cast_rows(xg.view(), xbv);
    // Every active expert's gate and up products into one [rows, I] pair, one GLU (and one cast)
    // over all rows, then every expert's down product.
    DevMat gate = ctx.mat(n_rows, I), up = ctx.mat(n_rows, I);
    auto rows_of = [&](const Buffer& b, int64_t r0, int64_t cnt, int64_t cols) {
      return TensorView::matrix(b.as<uint16_t>() + r0 * cols, DType::BF16, cnt, cols, cols, d);
    };
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = start[size_t(e)], cnt = start[size_t(e) + 1] - r0;
      if (cnt == 0) continue;
      const TensorView xe = bf16 ? rows_of(xb, r0, cnt, D) : xg.rows_view(r0, cnt);
      ctx.proj(xe, w.experts[size_t(e)].gate, gate.rows_view(r0, cnt));
      ctx.proj(xe, w.experts[size_t(e)].up, up.rows_view(r0, cnt));
    }
    act_rows(ctx, gate.view(), up.view());
    const Buffer hb(d, bf16 ? n_rows * I * 2 : 0);
    if (bf16) cast_rows(gate.view(), TensorView::matrix(hb.data(), DType::BF16, n_rows, I, I, d));
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = start[size_t(e)], cnt = start[size_t(e) + 1] - r0;
      if (cnt == 0) continue;
      const TensorView he = bf16 ? rows_of(hb, r0, cnt, I) : gate.rows_view(r0, cnt);
      ctx.proj(he, w.experts[size_t(e)].down, yg.rows_view(r0, cnt));
    }
  }
  weighted_combine_rows(yg.view(), TensorView::contiguous(pos.data(), DType::I32, {T, k}, d), r.weight, y);
}

// The token-major path takes one dense shared expert of the routed experts' shapes and dtype.
bool token_moe_fits(const DeviceMoe& w) {
  if (!w.shared || w.shared->gate.is_mxfp4() || w.shared->up.is_mxfp4() || w.shared->down.is_mxfp4())
    return false;
  const GroupedExperts& g = w.grouped;
  const WeightView &sg = w.shared->gate.dense, &su = w.shared->up.dense, &sd = w.shared->down.dense;
  return !g.mxfp4() && w.latent_down.data == nullptr && sg.dtype == g.dtype && su.dtype == g.dtype &&
         sd.dtype == g.dtype && sg.rows == g.I && sg.cols == g.D && su.rows == g.I && su.cols == g.D &&
         sd.rows == g.D && sd.cols == g.I;
}

// Host routing and one GLU per active expert: the reference path (device_moe off).
void moe_on_host(const ForwardContext& ctx, const DeviceMoe& w, const TensorView& x, const TensorView& y) {
  const MoeConfig& mc = ctx.cfg.moe;
  const int64_t T = ctx.T, E = mc.n_expert;
  DevMat logits = ctx.mat(T, E);
  ctx.proj(x, w.router, logits.view());
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

}  // namespace

bool moe_on_device(const ForwardContext& ctx, const DeviceMoe& w) {
  return ctx.device_moe && w.grouped.ptrs != nullptr;
}

void moe_forward(const ForwardContext& ctx, const DeviceMoe& w, const TensorView& x, const TensorView& y) {
  if (!moe_on_device(ctx, w)) return moe_on_host(ctx, w, x, y);
  const MoeConfig& mc = ctx.cfg.moe;
  const Device d = ctx.device;
  const int64_t T = ctx.T, E = mc.n_expert, k = mc.n_expert_per_token;
  // K3's Stable LatentMoE: the experts act on z = W_down x, their weighted sum u is normalised and
  // projected back (y = W_up rmsnorm(u)); the shared expert stays full width.
  const bool latent = w.latent_down.data != nullptr;
  // MXFP4 experts token-major up to kMoeGroupedMaxTokens: there the grouped GEMMs' 128-row tiles would
  // hold one or two rows per expert (K3: 16 of 896 experts per token), while token-major reads each
  // expert once per token that chose it.
  const bool token = T <= ctx.token_moe_max_tokens || (w.grouped.mxfp4() && T <= kMoeGroupedMaxTokens);
  const bool fuse_shared = token && token_moe_fits(w);
  // The router, the latent down-projection and the shared expert's gate and up read the same x: one
  // launch at batch 1 (the SiLU shared expert's; a SiTU one runs through glu_forward).
  const bool shared_pre = w.shared && !fuse_shared && ctx.cfg.act == Activation::Silu &&
                          !w.shared->gate.is_mxfp4() && !w.shared->up.is_mxfp4();
  const int64_t L = latent ? w.latent_down.rows : 0, SI = shared_pre ? w.shared->intermediate() : 0;
  DevMat logits = ctx.mat(T, E), z = ctx.mat(latent ? T : 0, L), sg = ctx.mat(shared_pre ? T : 0, SI),
         su = ctx.mat(shared_pre ? T : 0, SI);
  std::vector<FewRowsJob> jobs{{w.router, logits.view()}};
  if (latent) jobs.push_back({w.latent_down, z.view()});
  if (shared_pre)
    jobs.push_back({w.shared->gate.dense, sg.view()}), jobs.push_back({w.shared->up.dense, su.view()});
  ctx.proj_many(x, jobs);

  const Buffer expert(d, T * k * 4);
  DevMat weight = ctx.mat(T, k);
  MoeRouteArgs r;
  r.logits = logits.view();
  r.bias = w.bias_device;
  r.k = int(k), r.renormalize = mc.renormalize, r.scaling = mc.routed_scaling;
  r.expert = TensorView::contiguous(expert.data(), DType::I32, {T, k}, d);
  r.weight = weight.flat();
  moe_route(r);

  const TensorView rin = latent ? z.view() : x;
  DevMat u = ctx.mat(latent ? T : 0, L);
  const TensorView rout = latent ? u.view() : y;
  if (token) {
    // A few tokens: the routed (and a fitting shared) experts token-major in two launches.
    DevMat h = ctx.mat(T * (k + (fuse_shared ? 1 : 0)), w.grouped.I);
    MoeTokenGluArgs a;
    a.x = rin, a.expert = r.expert, a.weight = r.weight, a.experts = w.grouped;
    if (fuse_shared)
      a.shared_gate = w.shared->gate.dense, a.shared_up = w.shared->up.dense,
      a.shared_down = w.shared->down.dense;
    a.h = h.view(), a.y = rout;
    moe_token_glu(a);
  } else {
    moe_grouped_on_device(ctx, w, r, rin, rout);
  }
  if (latent) {
    if (w.latent_norm.data != nullptr) rmsnorm(u.view(), w.latent_norm, ctx.cfg.rms_norm_eps, u.view());
    ctx.proj(u.view(), w.latent_up, y);
  }
  if (shared_pre) {
    glu_down(ctx, sg.view(), su.view(), w.shared->down, y, /*accumulate=*/true);
  } else if (w.shared && !fuse_shared) {
    glu_forward(ctx, *w.shared, x, y, /*accumulate=*/true);
  }
}

}  // namespace ds
