#include "gpu/device_model.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <set>

#include "core/check.h"
#include "gpu/device_attn_res.h"
#include "gpu/forward_context.h"
#include "kernels/argmax.h"
#include "kernels/elementwise.h"
#include "kernels/expert_linear.h"
#include "kernels/gather.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace ds {
namespace {

double gib(int64_t bytes) {
  return double(bytes) / double(int64_t(1) << 30);
}

// "\rweights  42% (12.3 / 29.0 GiB)" on a terminal's stderr, at most every whole percent.
struct LoadProgress {
  bool on = isatty(fileno(stderr)) != 0;
  int last = -1;
  void operator()(int64_t done, int64_t total) {
    if (!on || total <= 0) return;
    const int pct = int(std::min<int64_t>(100, done * 100 / total));
    if (pct == last) return;
    last = pct;
    std::fprintf(stderr, "\rloading weights %3d%% (%.1f / %.1f GiB)", pct, gib(done), gib(total));
    if (pct == 100) std::fprintf(stderr, "\n");
  }
};

}  // namespace

// ---- ForwardContext ----------------------------------------------------------------------------

namespace {

// The packed index arrays of a step on the host.
struct StepIndexHost {
  std::vector<int32_t> ids, seq, pos, table, offset;
};

}  // namespace

ForwardContext::ForwardContext(const ModelConfig& c, const DeviceWeights& dw, DevicePools& p, bool exact,
                               const DeviceStep& step, int64_t page_capacity)
    : cfg(c), w(dw), pools(p), device(dw.device), exact_kda(exact) {
  N = int(step.seqs.size());
  cu.push_back(0);
  StepIndexHost h;
  decode = true;
  for (int n = 0; n < N; ++n) {
    const DeviceSeqStep& s = step.seqs[size_t(n)];
    const int64_t len = int64_t(s.tokens.size());
    cu.push_back(cu.back() + len);
    live.push_back(s.live_slot);
    n_past.push_back(s.n_past);
    decode = decode && len == 1;
    page_off.push_back(int32_t(h.table.size()));
    h.offset.push_back(int32_t(h.table.size()));
    h.table.insert(h.table.end(), s.pages.begin(), s.pages.end());
    for (int64_t i = 0; i < len; ++i) {
      h.ids.push_back(s.tokens[size_t(i)]);
      h.seq.push_back(n);
      h.pos.push_back(int32_t(s.n_past + i));
    }
    for (const DeviceCheckpoint& ck : s.checkpoints)
      checkpoints.push_back({n, ck.slot, ck.position - s.n_past});
  }
  T = cu.back();
  n_page_table = int64_t(h.table.size());
  ids = Buffer::from_host<int32_t>(device, h.ids);
  tok_seq = Buffer::from_host<int32_t>(device, h.seq);
  tok_pos = Buffer::from_host<int32_t>(device, h.pos);
  page_table = Buffer(device, std::max<int64_t>({page_capacity, n_page_table, 1}) * 4);
  if (n_page_table > 0) page_table.upload(h.table.data(), n_page_table * 4);
  page_offset = Buffer::from_host<int32_t>(device, h.offset);
  live_dev = Buffer::from_host<int32_t>(device, live);
}

bool ForwardContext::rewrite(const DeviceStep& step) {
  DS_CHECK(int(step.seqs.size()) == N && decode, "ForwardContext::rewrite: another kind of step");
  StepIndexHost h;
  for (int n = 0; n < N; ++n) {
    const DeviceSeqStep& s = step.seqs[size_t(n)];
    DS_CHECK(s.tokens.size() == 1 && s.checkpoints.empty(), "ForwardContext::rewrite: not a decode step");
    live[size_t(n)] = s.live_slot;
    n_past[size_t(n)] = s.n_past;
    page_off[size_t(n)] = int32_t(h.table.size());
    h.offset.push_back(int32_t(h.table.size()));
    h.table.insert(h.table.end(), s.pages.begin(), s.pages.end());
    h.ids.push_back(s.tokens[0]);
    h.pos.push_back(int32_t(s.n_past));
  }
  if (int64_t(h.table.size()) * 4 > page_table.bytes()) return false;
  n_page_table = int64_t(h.table.size());
  ids.upload(h.ids.data(), int64_t(N) * 4);
  tok_pos.upload(h.pos.data(), int64_t(N) * 4);
  if (n_page_table > 0) page_table.upload(h.table.data(), n_page_table * 4);
  page_offset.upload(h.offset.data(), int64_t(N) * 4);
  live_dev.upload(live.data(), int64_t(N) * 4);
  return true;
}

MlaPagedLatents ForwardContext::paged(int mla_layer) const {
  MlaPagedLatents p;
  p.pool = pools.latents(mla_layer);
  p.n_pages = pools.n_pages();
  p.page_tokens = pools.page_tokens();
  p.R = cfg.mla.kv_lora_rank;
  p.dr = cfg.mla.qk_rope_head_dim;
  p.page_table = i32(page_table, n_page_table);
  p.page_offset = i32(page_offset, N);
  p.tok_seq = i32(tok_seq, T);
  p.tok_pos = i32(tok_pos, T);
  p.device = device;
  return p;
}

namespace {

// x f32 rows converted to bf16 in `scratch` (which the returned view points into).
TensorView bf16_copy(const TensorView& x, Buffer& scratch) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  scratch = Buffer(x.device, rows * cols * 2);
  const TensorView xb = TensorView::matrix(scratch.data(), DType::BF16, rows, cols, -1, x.device);
  cast_rows(x, xb);
  return xb;
}

}  // namespace

void ForwardContext::proj(const TensorView& x, const WeightView& wv, const TensorView& y,
                          bool accumulate) const {
  // x f32, or bf16 already cast by the caller (then W must be bf16).
  // Up to gemv_max_rows rows (decode) through the GEMV, more through cuBLASLt.
  if (few_row_gemv && wv.device == Device::Cuda && x.shape[0] <= gemv_max_rows && linear_few_rows_fits(x, wv))
    return linear_few_rows(x, wv, y, accumulate);
  Buffer scratch;
  const bool cast = wv.device == Device::Cuda && wv.dtype == DType::BF16 && x.dtype != DType::BF16;
  linear(cast ? bf16_copy(x, scratch) : x, wv, y, accumulate);
}

void ForwardContext::proj_many(const TensorView& x, std::span<const FewRowsJob> jobs) const {
  bool one = few_row_gemv && device == Device::Cuda && x.shape[0] <= gemv_max_rows && !jobs.empty() &&
             int64_t(jobs.size()) <= kLinearFewRowsJobs;
  for (const FewRowsJob& j : jobs)
    one = one && j.w.dtype == jobs[0].w.dtype && j.w.cols == jobs[0].w.cols &&
          linear_few_rows_fits(j.x.data != nullptr ? j.x : x, j.w);
  if (one) return linear_few_rows_multi(x, jobs);
  // Several rows: x cast to bf16 once for all the bf16 products (jobs with their own rows: each alone).
  bool all_bf16 = device == Device::Cuda && x.dtype == DType::F32 && jobs.size() > 1;
  for (const FewRowsJob& j : jobs) all_bf16 = all_bf16 && j.w.dtype == DType::BF16 && j.x.data == nullptr;
  Buffer scratch;
  const TensorView xs = all_bf16 ? bf16_copy(x, scratch) : x;
  for (const FewRowsJob& j : jobs) proj(j.x.data != nullptr ? j.x : xs, j.w, j.y, j.accumulate);
}

void ForwardContext::proj(const TensorView& x, const ExpertLinear& wv, const TensorView& y,
                          bool accumulate) const {
  if (!wv.is_mxfp4()) return proj(x, wv.dense, y, accumulate);
  Buffer scratch;  // MXFP4 on CUDA is dequantised to x's dtype: bf16 in bf16 mode
  const bool cast = wv.device() == Device::Cuda && w.precision == Precision::BF16 && x.dtype != DType::BF16;
  expert_linear(cast ? bf16_copy(x, scratch) : x, wv, y, accumulate);
}

void ForwardContext::proj_heads(const TensorView& x_all, int64_t x_col0, int64_t x_cols, const WeightView& w0,
                                const TensorView& y0, int64_t heads, const HeadStrides& s) const {
  if (few_row_gemv && heads_gemv && w0.device == Device::Cuda && x_all.dtype == DType::F32 &&
      x_all.shape[0] <= gemv_max_rows) {
    const TensorView x0 = TensorView::matrix(static_cast<float*>(x_all.data) + x_col0, DType::F32,
                                             x_all.shape[0], x_cols, x_all.stride[0], x_all.device);
    if (linear_few_rows_heads_fits(x0, w0, s)) return linear_few_rows_heads(x0, w0, y0, heads, s);
  }
  Buffer scratch;
  const bool cast = w0.device == Device::Cuda && w0.dtype == DType::BF16 && x_all.dtype != DType::BF16;
  const TensorView xa = cast ? bf16_copy(x_all, scratch) : x_all;
  const TensorView x0 =
      TensorView::matrix(static_cast<char*>(xa.data) + x_col0 * int64_t(dtype_size(xa.dtype)), xa.dtype,
                         xa.shape[0], x_cols, xa.stride[0], xa.device);
  linear_heads(x0, w0, y0, heads, s);
}

// ---- DeviceModel -------------------------------------------------------------------------------

std::unique_ptr<DeviceModel> DeviceModel::load(const std::string& dir, const DeviceModelOptions& opt,
                                               std::ostream* log) {
  std::unique_ptr<DeviceModel> m(new DeviceModel());
  m->cfg_ = ModelConfig::load(dir);
  m->opt_ = opt;
  const ModelConfig& cfg = m->cfg_;
  if (opt.device == Device::Cuda) {
    DS_CHECK(cuda_available(), "{}: no usable CUDA device (a CPU-only build, or no GPU / driver)", dir);
    DS_CHECK(cfg.kda.head_dim == 128 || cfg.n_kda_layers() == 0,
             "{}: KDA head_dim {}; the CUDA KDA kernels take 128", dir, cfg.kda.head_dim);
  }
  const WeightFiles files = WeightFiles::open(dir, cfg.tensor_prefix());
  const ModelWeights bound = ModelWeights::bind(cfg, files);
  LoadProgress progress;
  progress.on = progress.on && log != nullptr;
  m->w_ = DeviceWeights::upload(cfg, bound, opt.device, opt.precision, std::ref(progress));
  m->set_layer_indices();
  const int k = cfg.n_kda_layers(), a = cfg.n_mla_layers();
  if (log) {
    *log << fmt::format("weights on {} ({} GEMM weights): {:.2f} GiB\n", device_name(opt.device),
                        precision_name(opt.precision), gib(m->w_.bytes()));
    for (const auto& [part, bytes] : m->w_.bytes_by_part())
      *log << fmt::format("  {:<22} {:8.3f} GiB\n", part, gib(bytes));
    const KdaStateShape s = m->kda_state_shape();
    *log << fmt::format("  per sequence: KDA state {:.1f} MiB (all layers), MLA latents {} B/token (f32)\n",
                        double(int64_t(s.floats()) * 4 * k) / (1 << 20),
                        int64_t(cfg.mla.latent_dim()) * 4 * a);
  }
  return m;
}

std::unique_ptr<DeviceModel> DeviceModel::random(const ModelConfig& cfg, const DeviceModelOptions& opt,
                                                 uint64_t seed) {
  if (opt.device == Device::Cuda)
    DS_CHECK(cuda_available(), "random model: no usable CUDA device (a CPU-only build, or no GPU / driver)");
  std::unique_ptr<DeviceModel> m(new DeviceModel());
  m->cfg_ = cfg;
  m->opt_ = opt;
  m->w_ = DeviceWeights::random(cfg, opt.device, opt.precision, seed);
  m->set_layer_indices();
  return m;
}

void DeviceModel::set_layer_indices() {
  int k = 0, a = 0;
  for (LayerKind kind : cfg_.layer_kind) {
    kda_index_.push_back(kind == LayerKind::Kda ? k++ : -1);
    mla_index_.push_back(kind == LayerKind::Mla ? a++ : -1);
  }
}

KdaStateShape DeviceModel::kda_state_shape() const {
  return {cfg_.kda.n_head, cfg_.kda.head_dim, cfg_.kda.conv_kernel - 1};
}

DevicePools DeviceModel::make_pools(Device device, bool pinned, int64_t page_tokens) const {
  return DevicePools(device, pinned, cfg_.n_mla_layers(), page_tokens, cfg_.mla.latent_dim(),
                     cfg_.n_kda_layers(), kda_state_shape());
}

void DeviceModel::validate(const DeviceStep& step, const DevicePools& pools) const {
  DS_CHECK(!step.seqs.empty(), "device forward: empty step");
  DS_CHECK(pools.device() == opt_.device, "device forward: pools in {} memory, model on {}",
           device_name(pools.device()), device_name(opt_.device));
  DS_CHECK(pools.kda_shape() == kda_state_shape() && pools.latent_dim() == cfg_.mla.latent_dim(),
           "device forward: pools were made for another model");
  std::set<int32_t> live;
  std::set<std::pair<int32_t, int64_t>> written;  // (page id, nothing) pages written this step
  for (size_t s = 0; s < step.seqs.size(); ++s) {
    const DeviceSeqStep& q = step.seqs[s];
    const int64_t n = int64_t(q.tokens.size()), end = q.n_past + n;
    DS_CHECK(n > 0 && q.n_past >= 0, "device forward: sequence {} has {} new tokens after {}", s, n,
             q.n_past);
    for (int32_t t : q.tokens)
      DS_CHECK(t >= 0 && t < cfg_.vocab_size,
               "device forward: sequence {} token {} is outside the vocabulary [0, {})", s, t,
               cfg_.vocab_size);
    DS_CHECK(q.live_slot >= 0 && q.live_slot < pools.n_slots(),
             "device forward: sequence {} live slot {} not in [0, {})", s, q.live_slot, pools.n_slots());
    DS_CHECK(live.insert(q.live_slot).second, "device forward: two sequences share live slot {}",
             q.live_slot);
    if (cfg_.n_mla_layers() > 0) {
      DS_CHECK(int64_t(q.pages.size()) * pools.page_tokens() >= end,
               "device forward: sequence {} has {} pages for {} tokens", s, q.pages.size(), end);
      for (int64_t p = 0; p * pools.page_tokens() < end; ++p) {
        const int32_t id = q.pages[size_t(p)];
        DS_CHECK(id >= 0 && id < pools.n_pages(), "device forward: sequence {} page id {} not in [0, {})", s,
                 id, pools.n_pages());
        if ((p + 1) * pools.page_tokens() > q.n_past)
          DS_CHECK(written.insert({id, 0}).second, "device forward: page {} is written by two sequences", id);
      }
    }
    int64_t prev = q.n_past;
    for (const DeviceCheckpoint& c : q.checkpoints) {
      DS_CHECK(c.position > prev && c.position <= end,
               "device forward: sequence {} checkpoint at {} not in ({}, {}] or not ascending", s, c.position,
               prev, end);
      DS_CHECK(c.slot >= 0 && c.slot < pools.n_slots(), "device forward: checkpoint slot {} not in [0, {})",
               c.slot, pools.n_slots());
      prev = c.position;
    }
  }
  for (const DeviceSeqStep& q : step.seqs)
    for (const DeviceCheckpoint& c : q.checkpoints)
      DS_CHECK(!live.count(c.slot), "device forward: checkpoint slot {} is a live slot of this step", c.slot);
}

ForwardContext DeviceModel::make_context(const DeviceStep& step, DevicePools& pools,
                                         int64_t page_capacity) const {
  ForwardContext ctx(cfg_, w_, pools, opt_.exact_kda, step, page_capacity);
  ctx.device_moe = opt_.device_moe;
  ctx.batched_heads = opt_.batched_heads;
  ctx.few_row_gemv = opt_.few_row_gemv;
  ctx.gemv_max_rows = opt_.gemv_max_rows;
  ctx.heads_gemv = opt_.heads_gemv;
  ctx.token_moe_max_tokens = opt_.token_moe_max_tokens;
  ctx.dense_mla = opt_.dense_mla;
  ctx.mma_mla = opt_.mma_mla;
  ctx.flash_mla = opt_.flash_mla;
  ctx.grouped_gemm = opt_.grouped_gemm;
  ctx.wgmma_moe = opt_.wgmma_moe;
  return ctx;
}

void DeviceModel::run_layers(const ForwardContext& ctx, const DevMat& x,
                             DeviceForwardResult* captured) const {
  const int64_t T = ctx.T, D = cfg_.hidden;
  const float eps = cfg_.rms_norm_eps;
  auto capture = [&](const DevMat& m) {
    if (captured) captured->layer_outputs.push_back(m.buf.to_host<float>());
  };
  DevMat h = ctx.mat(T, D), y = ctx.mat(T, D);
  embedding_rows(w_.embed, ctx.i32(ctx.ids, T), x.view());
  auto mixer = [&](int l, const DevMat& in, const DevMat& out) {
    const DeviceLayer& L = w_.layers[size_t(l)];
    if (L.kda)
      kda_mixer(ctx, *L.kda, kda_index_[size_t(l)], in.view(), out.view());
    else
      mla_mixer(ctx, *L.mla, mla_index_[size_t(l)], in.view(), out.view());
  };
  auto ffn = [&](int l, const DevMat& in, const DevMat& out) {
    const DeviceLayer& L = w_.layers[size_t(l)];
    if (L.moe)
      moe_forward(ctx, *L.moe, in.view(), out.view());
    else
      glu_forward(ctx, *L.mlp, in.view(), out.view());
  };
  if (cfg_.attn_res_block_size > 0) {
    DeviceAttnRes st(ctx, opt_.attn_res);
    st.start(x);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const DeviceLayer& L = w_.layers[size_t(l)];
      st.attn_input(l, h);
      rmsnorm(h.view(), L.input_norm, eps, h.view());
      mixer(l, h, y);
      st.add_attn_output(l, y);
      st.mlp_input(l, h);
      rmsnorm(h.view(), L.post_norm, eps, h.view());
      ffn(l, h, y);
      st.add_mlp_output(y);
      capture(st.partial());
    }
    st.final_output(x);
  } else {
    // Each residual add runs with the norm after it (add_rmsnorm): x += y, h = norm(x).
    if (cfg_.n_layer > 0) rmsnorm(x.view(), w_.layers[0].input_norm, eps, h.view());
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const DeviceLayer& L = w_.layers[size_t(l)];
      mixer(l, h, y);
      add_rmsnorm(y.view(), x.view(), L.post_norm, eps, h.view());
      ffn(l, h, y);
      if (l + 1 < cfg_.n_layer)
        add_rmsnorm(y.view(), x.view(), w_.layers[size_t(l) + 1].input_norm, eps, h.view());
      else
        add_rows(y.view(), x.view());
      capture(x);
    }
  }
}

DeviceForwardResult DeviceModel::forward(const DeviceStep& step, DevicePools& pools) const {
  validate(step, pools);
  if (graph_eligible(step)) return forward_graph(step, pools);
  return forward_eager(step, pools);
}

DeviceForwardResult DeviceModel::forward_eager(const DeviceStep& step, DevicePools& pools) const {
  const ForwardContext ctx = make_context(step, pools);
  const int64_t T = ctx.T, D = cfg_.hidden, V = cfg_.vocab_size;
  DeviceForwardResult r;
  DevMat x = ctx.mat(T, D);
  run_layers(ctx, x, step.capture_layer_outputs ? &r : nullptr);
  // Final norm and lm_head over the rows that want logits, in one product.
  std::vector<int32_t> rows;
  std::vector<int64_t> first_row(size_t(ctx.N));
  for (int n = 0; n < ctx.N; ++n) {
    first_row[size_t(n)] = int64_t(rows.size());
    const LogitsWant want = step.seqs[size_t(n)].logits;
    if (want == LogitsWant::Last) rows.push_back(int32_t(ctx.cu[size_t(n) + 1] - 1));
    if (want == LogitsWant::All)
      for (int64_t t = ctx.cu[size_t(n)]; t < ctx.cu[size_t(n) + 1]; ++t) rows.push_back(int32_t(t));
  }
  if (rows.empty()) {
    r.logits.resize(size_t(ctx.N));
    r.tokens.resize(size_t(ctx.N));
    return r;
  }
  const int64_t n_rows = int64_t(rows.size());
  const Buffer idx = Buffer::from_host<int32_t>(opt_.device, rows);
  DevMat hr = ctx.mat(n_rows, D), logits = ctx.mat(n_rows, V);
  gather_rows(x.view(), ctx.i32(idx, n_rows), hr.view());
  rmsnorm(hr.view(), w_.final_norm, cfg_.rms_norm_eps, hr.view());
  ctx.proj(hr.view(), w_.lm_head, logits.view());
  Buffer best;
  if (step_wants_argmax(step)) {
    best = Buffer(opt_.device, n_rows * 4);
    argmax_rows(logits.view(), ctx.i32(best, n_rows));
  }
  read_step_outputs(step, logits.buf, step_wants_argmax(step) ? &best : nullptr, first_row, n_rows, V, r);
  return r;
}

bool step_wants_argmax(const DeviceStep& step) {
  for (const DeviceSeqStep& s : step.seqs)
    if (s.argmax_only) return true;
  return false;
}

void read_step_outputs(const DeviceStep& step, const Buffer& logits, const Buffer* tokens,
                       std::span<const int64_t> first_row, int64_t n_rows, int64_t V,
                       DeviceForwardResult& r) {
  const size_t N = step.seqs.size();
  r.logits.assign(N, {});
  r.tokens.assign(N, {});
  std::vector<int32_t> best;
  if (tokens != nullptr) best = tokens->to_host<int32_t>();  // N small ids: one short copy
  for (size_t n = 0; n < N; ++n) {
    const int64_t r0 = first_row[n], r1 = n + 1 < N ? first_row[n + 1] : n_rows;
    if (step.seqs[n].argmax_only) {
      DS_CHECK(tokens != nullptr, "device forward: argmax asked without argmax rows");
      r.tokens[n].assign(best.begin() + r0, best.begin() + r1);
    } else if (r1 > r0) {
      r.logits[n].resize(size_t((r1 - r0) * V));
      logits.download(r.logits[n].data(), (r1 - r0) * V * int64_t(sizeof(float)),
                      r0 * V * int64_t(sizeof(float)));
    }
  }
}

}  // namespace ds
