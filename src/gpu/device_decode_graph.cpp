// DeviceModel's decode graphs: a decode step of a batch size seen before replays the step recorded
// for it (kernels/graph.h) after rewriting the step's index arrays in place; the first step of a
// batch size (or after the pools moved) runs eagerly and records the graph for the next ones.
#include "core/check.h"
#include "gpu/device_model.h"
#include "gpu/forward_context.h"
#include "kernels/argmax.h"
#include "kernels/graph.h"
#include "kernels/norm.h"

namespace ds {

struct DeviceModel::DecodeGraph {
  // The pools' memory the graph was recorded against.
  const DevicePools* pools = nullptr;
  const float* latents0 = nullptr;
  const float* slots = nullptr;
  int64_t n_pages = 0, n_slots = 0;
  bool greedy = false;
  std::unique_ptr<ForwardContext> ctx;  // index arrays at fixed addresses
  DevMat logits;                        // f32 [N, V]
  Buffer tokens;                        // I32 [N]
  StepGraph graph;

  bool matches(const DevicePools& p, bool want_greedy, bool has_mla) const {
    return pools == &p && (!has_mla || latents0 == p.latents(0)) && slots == p.slots_base() &&
           n_pages == p.n_pages() && n_slots == p.n_slots() && greedy == want_greedy;
  }
};

DeviceModel::DeviceModel() = default;
DeviceModel::~DeviceModel() = default;

void DeviceModel::set_execution(const DeviceModelOptions& opt) {
  DS_CHECK(opt.device == opt_.device && opt.precision == opt_.precision,
           "DeviceModel::set_execution: device and precision are fixed at load");
  graphs_.clear();
  opt_ = opt;
}

bool DeviceModel::graph_eligible(const DeviceStep& step) const {
  if (!opt_.decode_graphs || !step.allow_graph || !opt_.device_moe || step.capture_layer_outputs ||
      cfg_.attn_res_block_size > 0)
    return false;
  if (int64_t(step.seqs.size()) > kMoeGroupedMaxTokens) return false;
  for (const DeviceSeqStep& s : step.seqs)
    if (s.tokens.size() != 1 || !s.checkpoints.empty() || s.logits != LogitsWant::Last) return false;
  for (const DeviceLayer& L : w_.layers)
    if (L.moe && (L.moe->grouped.ptrs == nullptr || L.moe->latent_down.data != nullptr ||
                  cfg_.act != Activation::Silu))
      return false;
  return true;
}

DeviceForwardResult DeviceModel::forward_graph(const DeviceStep& step, DevicePools& pools) const {
  const int N = int(step.seqs.size());
  const int64_t D = cfg_.hidden, V = cfg_.vocab_size;
  const bool has_mla = cfg_.n_mla_layers() > 0;
  std::unique_ptr<DecodeGraph>& slot = graphs_[N];
  if (!slot || !slot->matches(pools, step_wants_argmax(step), has_mla) || !slot->ctx->rewrite(step)) {
    slot.reset();
    DeviceForwardResult r = forward_eager(step, pools);
    auto g = std::make_unique<DecodeGraph>();
    g->pools = &pools;
    g->latents0 = has_mla ? pools.latents(0) : nullptr;
    g->slots = pools.slots_base();
    g->n_pages = pools.n_pages(), g->n_slots = pools.n_slots();
    g->greedy = step_wants_argmax(step);
    g->ctx = std::make_unique<ForwardContext>(make_context(step, pools, int64_t(N) * pools.n_pages()));
    g->logits = g->ctx->mat(N, V);
    g->tokens = Buffer(opt_.device, int64_t(N) * 4);
    DecodeGraph* gp = g.get();
    const float eps = cfg_.rms_norm_eps;
    g->graph.capture(opt_.device, [this, gp, N, D, eps] {
      const ForwardContext& ctx = *gp->ctx;
      DevMat x = ctx.mat(N, D);
      run_layers(ctx, x, nullptr);
      rmsnorm(x.view(), w_.final_norm, eps, x.view());
      ctx.proj(x.view(), w_.lm_head, gp->logits.view());
      if (gp->greedy) argmax_rows(gp->logits.view(), ctx.i32(gp->tokens, N));
    });
    slot = std::move(g);
    return r;
  }
  slot->graph.replay();
  ++graph_replays_;
  DeviceForwardResult r;
  std::vector<int64_t> first_row(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) first_row[size_t(n)] = n;
  read_step_outputs(step, slot->logits.buf, slot->greedy ? &slot->tokens : nullptr, first_row, N, V, r);
  return r;
}

}  // namespace ds
