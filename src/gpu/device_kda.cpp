// KDA mixer of the device forward (see device_model.h).
#include <cmath>

#include "gpu/forward_context.h"
#include "kernels/graph.h"
#include "kernels/kda.h"
#include "kernels/memory.h"
#include "kernels/norm.h"
#include "kernels/short_conv.h"

namespace ds {

void kda_mixer(const ForwardContext& ctx, const DeviceKda& w, int kda_layer, const TensorView& n,
               const TensorView& y) {
  const ModelConfig& cfg = ctx.cfg;
  const int64_t T = ctx.T, H = cfg.kda.n_head, K = cfg.kda.head_dim, P = H * K, W = cfg.kda.conv_kernel;
  DevMat pre = ctx.mat(T, 3 * P);  // pre-conv q | k | v
  DevMat low = ctx.mat(T, K), glow = ctx.mat(T, K), f = ctx.mat(T, P), b = ctx.mat(T, H), r = ctx.mat(T, P),
         o = ctx.mat(T, P);
  // Every projection of the normed input at once (one launch at batch 1), then the low-rank second halves.
  const bool full_g = w.g.data != nullptr;
  const FewRowsJob first[] = {{w.q, pre.cols_view(0, P)},
                              {w.k, pre.cols_view(P, P)},
                              {w.v, pre.cols_view(2 * P, P)},
                              {w.f_a, low.view()},
                              {w.b, b.view()},
                              full_g ? FewRowsJob{w.g, r.view()} : FewRowsJob{w.g_a, glow.view()}};
  ctx.proj_many(n, first);
  if (full_g) {
    ctx.proj(low.view(), w.f_b, f.view());
  } else {  // one launch at batch 1: g_b's job brings its own input rows
    const FewRowsJob second[] = {{w.f_b, f.view()}, {w.g_b, r.view(), false, glow.view()}};
    ctx.proj_many(low.view(), second);
  }
  // This layer's part of every state slot: conv windows, then S.
  DevicePools& pools = ctx.pools;
  const int64_t layer_off = int64_t(kda_layer) * pools.layer_state_floats();
  float* conv = pools.slots_base() + layer_off;
  float* S = conv + int64_t(pools.kda_shape().conv_floats());
  const KdaStatePool pool{S, pools.slot_floats(), pools.n_slots(), ctx.device};
  const KdaGate gate{cfg.kda.gate_lower_bound, w.a_log, w.dt_bias};
  const float scale = 1.0f / std::sqrt(float(K));
  if (ctx.decode) {
    KdaDecodeArgs a;
    a.B = T, a.H = H, a.K = K, a.V = K, a.W = W;
    a.q_pre = pre.cols_view(0, P), a.k_pre = pre.cols_view(P, P), a.v_pre = pre.cols_view(2 * P, P);
    a.f = f.view(), a.b = b.view(), a.r = r.view(), a.y = o.view();
    a.conv_taps = TensorView::contiguous(w.taps.data, DType::F32, {3 * P * W}, ctx.device);
    a.o_norm = w.o_norm;
    a.gate = gate;
    a.scale = scale, a.norm_eps = cfg.rms_norm_eps;
    a.pool = pool;
    a.conv_data = conv, a.conv_slot_stride = pools.slot_floats();
    a.slots = ctx.i32(ctx.live_dev, T);
    // On the thread's default stream by handle, so that it is a programmatic dependent launch; the
    // kernel before it (a projection GEMV) writes activations only, so the states may load early.
    a.stream = default_stream(ctx.device);
    a.overlap_prior_kernel = true;
    kda_decode(a);
    // One token per sequence: a checkpoint is the state after it, this layer's part of the live slot.
    for (const KdaCheckpointRequest& c : ctx.checkpoints)
      copy_bytes(pools.slot(c.slot) + layer_off, ctx.device, pools.slot(ctx.live[size_t(c.seq)]) + layer_off,
                 ctx.device, pools.layer_state_floats() * int64_t(sizeof(float)));
  } else {
    DevMat act = ctx.mat(T, 3 * P);  // q | k | v after the conv and SiLU
    ShortConvBatchArgs c;
    c.cu_seqlens = ctx.cu;
    c.x = pre.view(), c.taps = w.taps, c.y = act.view();
    c.pool = conv, c.slot_stride = pools.slot_floats(), c.n_slots = pools.n_slots();
    c.slots = ctx.live;
    c.checkpoints = ctx.checkpoints;
    c.device = ctx.device;
    short_conv_batch(c);
    KdaPrefillArgs a;
    a.H = H, a.K = K, a.V = K;
    a.cu_seqlens = ctx.cu;
    a.q = act.cols_view(0, P), a.k = act.cols_view(P, P), a.v = act.cols_view(2 * P, P);
    a.f = f.view(), a.b = b.view(), a.o = o.view();
    a.gate = gate;
    a.scale = scale;
    a.pool = pool;
    a.initial_slot = ctx.live, a.final_slot = ctx.live;
    a.checkpoints = ctx.checkpoints;
    // The CUDA chunked kernel emits at any position; the CPU's chunked form at multiples of
    // kKdaCheckpointAlign or a sequence's end only (else the exact per-token path).
    bool aligned = true;
    for (const KdaCheckpointRequest& ck : ctx.checkpoints)
      aligned = aligned && (ck.after_tokens % kKdaCheckpointAlign == 0 ||
                            ck.after_tokens == ctx.cu[size_t(ck.seq) + 1] - ctx.cu[size_t(ck.seq)]);
    a.exact = ctx.exact_kda || (ctx.device != Device::Cuda && !aligned);
    kda_prefill(a);
    rmsnorm_gated_sigmoid(o.reshaped(T * H, K), r.reshaped(T * H, K), w.o_norm, cfg.rms_norm_eps,
                          o.reshaped(T * H, K));
  }
  ctx.proj(o.view(), w.o, y);
}

}  // namespace ds
