#include "runner/model_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>

#include "core/check.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "layers/attn_res.h"
#include "layers/moe_layer.h"
#include "model/weights.h"

namespace ds {
namespace {

// The mapped checkpoint and the typed views into it; the runner's WeightViews point into it.
struct LoadedWeightFiles {
  WeightFiles ck;
  ModelWeights w;
};

WeightView view2d(const TensorRef& t) {
  DS_CHECK(t.dtype == DType::F32 || t.dtype == DType::BF16,
           "tensor {} has dtype {}; the CPU linear kernels take F32 or BF16", t.name, dtype_name(t.dtype));
  DS_CHECK(t.shape.size() >= 1 && t.shape[0] > 0, "tensor {} has shape {}, expected a matrix", t.name,
           t.shape_str());
  return WeightView{t.data, t.dtype, t.shape[0], t.numel() / t.shape[0]};
}

// Small parameter (norm weight, conv taps, bias) as f32, first n values (n < 0: all).
std::vector<float> to_f32(const TensorRef& t, int64_t n = -1) {
  const int64_t count = n < 0 ? t.numel() : n;
  DS_CHECK(count <= t.numel(), "tensor {} has {} values, need {}", t.name, t.numel(), count);
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    switch (t.dtype) {
      case DType::F32:
        std::memcpy(&out[size_t(i)], t.data + 4 * i, 4);
        break;
      case DType::BF16:
        out[size_t(i)] = bf16_to_f32(uint16_t(t.data[2 * i] | t.data[2 * i + 1] << 8));
        break;
      case DType::F16:
        out[size_t(i)] = f16_to_f32(uint16_t(t.data[2 * i] | t.data[2 * i + 1] << 8));
        break;
      default:
        fail("tensor {} has dtype {}; expected F32, BF16 or F16", t.name, dtype_name(t.dtype));
    }
  }
  return out;
}

SituParams situ_params(const ModelConfig& cfg) {
  return SituParams{cfg.situ_beta, cfg.situ_linear_beta};
}

GluMlp glu(const DenseMlpWeights& w, const ModelConfig& cfg) {
  return GluMlp{view2d(w.gate_proj), view2d(w.up_proj), view2d(w.down_proj), cfg.act, situ_params(cfg)};
}

// A projection weight of a routed expert: dense, or MXFP4 dequantised on the fly.
ExpertLinear make_expert_linear(const LinearWeight& w) {
  if (w.is_mxfp4()) return Mxfp4View{w.weight.data, w.scale->data, w.out, w.in};
  return view2d(w.weight);
}

KdaParams kda_params(const ModelConfig& cfg, const KdaWeights& w) {
  const bool full = cfg.kda.full_rank_output_gate;  // K3 g_proj, else low-rank g_a/g_b
  DS_CHECK(full ? bool(w.g_proj) : (w.g_a_proj && w.g_b_proj), "kda layer {}: no {} output gate",
           w.q_proj.name, full ? "full-rank g_proj" : "low-rank g_a_proj/g_b_proj");
  KdaParams p{view2d(w.q_proj),
              view2d(w.k_proj),
              view2d(w.v_proj),
              view2d(w.f_a_proj),
              view2d(w.f_b_proj),
              view2d(w.b_proj),
              full ? WeightView{} : view2d(*w.g_a_proj),
              full ? WeightView{} : view2d(*w.g_b_proj),
              view2d(w.o_proj),
              to_f32(w.q_conv),
              to_f32(w.k_conv),
              to_f32(w.v_conv),
              to_f32(w.a_log, cfg.kda.n_head),
              to_f32(w.dt_bias),
              to_f32(w.o_norm),
              full ? view2d(*w.g_proj) : WeightView{}};
  return p;
}

MlaParams mla_params(const MlaWeights& w) {
  MlaParams p;
  if (w.q_proj) p.q_proj = view2d(*w.q_proj);
  if (w.q_a_proj) p.q_a = view2d(*w.q_a_proj);
  if (w.q_b_proj) p.q_b = view2d(*w.q_b_proj);
  if (w.q_a_layernorm) p.q_a_norm = to_f32(*w.q_a_layernorm);
  p.kv_a = view2d(w.kv_a_proj);
  p.kv_a_norm = to_f32(w.kv_a_layernorm);
  p.kv_b = view2d(w.kv_b_proj);
  if (w.g_proj) p.g_proj = view2d(*w.g_proj);
  p.o_proj = view2d(w.o_proj);
  return p;
}

MoeParams moe_params(const ModelConfig& cfg, const MoeWeights& w) {
  MoeParams p;
  p.router = view2d(w.gate);
  p.correction_bias = to_f32(w.e_score_correction_bias);
  if (w.latent_down) p.latent_down = view2d(*w.latent_down);
  if (w.latent_up) p.latent_up = view2d(*w.latent_up);
  if (w.latent_norm) p.latent_norm = to_f32(*w.latent_norm);
  for (const ExpertWeights& e : w.experts)
    p.experts.push_back(GluMlp{make_expert_linear(e.w1), make_expert_linear(e.w3), make_expert_linear(e.w2),
                               cfg.act, situ_params(cfg)});
  if (w.shared) p.shared = glu(*w.shared, cfg);
  return p;
}

// Folded AttnRes queries (as K3's HF `_apply_attn_res`): q = res_norm.weight ⊙ res_proj.weight, per sublayer.
AttnResQueries attn_res_queries(const ModelConfig& cfg, const ModelWeights& w) {
  AttnResQueries q;
  q.n_layer = cfg.n_layer, q.hidden = cfg.hidden;
  auto fold = [](const std::optional<AttnResWeights>& r, const char* what, int layer) {
    DS_CHECK(r.has_value(), "attn_res_block_size is set but layer {} has no {} weights", layer, what);
    return fold_attn_res_query(to_f32(r->norm), to_f32(r->proj));
  };
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto a = fold(w.layers[size_t(l)].attn_res, "self_attention_res", l);
    const auto m = fold(w.layers[size_t(l)].mlp_res, "mlp_res", l);
    q.attn.insert(q.attn.end(), a.begin(), a.end());
    q.mlp.insert(q.mlp.end(), m.begin(), m.end());
  }
  q.out = fold(w.output_res, "output_attn_res", cfg.n_layer);
  q.validate();
  return q;
}

}  // namespace

struct ModelRunner::Block {
  LayerKind kind = LayerKind::Kda;
  std::vector<float> input_norm;  // f32 [D]
  std::vector<float> post_norm;   // f32 [D]
  std::unique_ptr<KdaLayer> kda;
  std::unique_ptr<MlaLayer> mla;
  std::unique_ptr<MoeLayer> moe;  // MoE FFN (K3: with latent projections / MXFP4 experts), or
  GluMlp mlp;                     // dense FFN when moe is null
};

ModelRunner::~ModelRunner() = default;

const KdaLayer* ModelRunner::kda_layer(int layer) const {
  DS_CHECK(layer >= 0 && layer < cfg_.n_layer, "kda_layer: layer {} not in [0, {})", layer, cfg_.n_layer);
  return blocks_[size_t(layer)]->kda.get();
}

std::unique_ptr<ModelRunner> ModelRunner::load(const std::string& dir, RunnerOptions opt) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    fail("model {} is a file; expected a checkpoint folder (config.json + *.safetensors)", dir);
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  r->cfg_ = ModelConfig::load(dir);
  r->opt_ = opt;
  const ModelConfig& cfg = r->cfg_;
  auto loaded = std::make_shared<LoadedWeightFiles>(
      LoadedWeightFiles{WeightFiles::open(dir, cfg.multimodal_wrapper ? "language_model." : ""), {}});
  loaded->w = ModelWeights::bind(cfg, loaded->ck);
  const ModelWeights& w = loaded->w;
  r->embed_ = view2d(w.embed);
  r->lm_head_ = view2d(w.lm_head);
  r->final_norm_ = to_f32(w.final_norm);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerWeights& lw = w.layers[size_t(l)];
    auto b = std::make_unique<Block>();
    b->kind = cfg.layer_kind[size_t(l)];
    b->input_norm = to_f32(lw.input_layernorm);
    b->post_norm = to_f32(lw.post_attention_layernorm);
    if (b->kind == LayerKind::Kda)
      b->kda = std::make_unique<KdaLayer>(cfg.kda, cfg.rms_norm_eps, cfg.hidden, kda_params(cfg, *lw.kda),
                                          opt.kda);
    else
      b->mla = std::make_unique<MlaLayer>(cfg.mla, cfg.hidden, mla_params(*lw.mla));
    if (lw.moe) {
      b->moe = std::make_unique<MoeLayer>(cfg.moe, cfg.rms_norm_eps, moe_params(cfg, *lw.moe));
    } else {
      DS_CHECK(lw.mlp.has_value(), "{}: layer {} has neither an MoE nor a dense MLP", dir, l);
      b->mlp = glu(*lw.mlp, cfg);
      b->mlp.validate("dense mlp");
    }
    r->blocks_.push_back(std::move(b));
  }
  if (cfg.attn_res_block_size > 0) r->attn_res_ = attn_res_queries(cfg, w);
  r->keep_alive_ = std::move(loaded);
  return r;
}

namespace {

// Memory this process may still allocate: MemAvailable of /proc/meminfo, else free physical pages.
int64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return int64_t(sysconf(_SC_AVPHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
}

std::string bytes_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", double(bytes) / double(int64_t{1} << 30));
  return fmt::format("{:.1f} MiB", double(bytes) / double(int64_t{1} << 20));
}

}  // namespace

int64_t ModelRunner::forward_bytes_estimate(const ForwardBatch& batch) const {
  const int64_t D = cfg_.hidden, V = cfg_.vocab_size;
  const int64_t kda_width = int64_t(cfg_.kda.n_head) * cfg_.kda.head_dim;
  const int64_t mla_q = int64_t(cfg_.mla.n_head) * cfg_.mla.qk_head_dim();
  const int64_t mla_kv = int64_t(cfg_.mla.n_head) * (cfg_.mla.qk_nope_head_dim + cfg_.mla.v_head_dim);
  const int64_t moe =
      int64_t(cfg_.moe.n_expert_per_token) * 3 * std::max(cfg_.moe.expert_intermediate, cfg_.moe.latent_dim) +
      cfg_.moe.n_expert;
  const int64_t ffn = std::max<int64_t>(moe, 3 * int64_t(cfg_.dense_intermediate));
  // Per new token: residual + normed input + mixer output + Block AttnRes stream, the widest mixer
  // (KDA q/k/v/g/beta + pre-conv copies, or MLA q + latent), the FFN temporaries.
  const int64_t attn_res = cfg_.attn_res_block_size > 0 ? (2 * int64_t(cfg_.attn_res_block_size) + 1) * D : 0;
  const int64_t per_token =
      4 * D + attn_res + std::max(8 * kda_width, mla_q + cfg_.mla.latent_dim()) + ffn +
      int64_t(cfg_.mla.latent_dim()) * cfg_.n_mla_layers();  // the latents appended to the states
  int64_t floats = 0, max_context = 0, state_floats = 0;
  const int64_t kda_state = int64_t(cfg_.kda.n_head) * cfg_.kda.head_dim * cfg_.kda.head_dim +
                            3 * kda_width * std::max(cfg_.kda.conv_kernel - 1, 0);
  for (const SequenceInput& in : batch.seqs) {
    const int64_t n = int64_t(in.tokens.size());
    floats += n * per_token;
    floats += (in.logits == LogitsWant::All ? n : in.logits == LogitsWant::Last ? 1 : 0) * V;
    max_context = std::max(max_context, in.state->n_tokens + n);
    state_floats += int64_t(in.emit_state_at.size()) * kda_state * cfg_.n_kda_layers();
  }
  // MLA prefill expands the cached latents of one sequence into per-head K and V at a time.
  floats += max_context * mla_kv;
  return 4 * (floats + state_floats);
}

void ModelRunner::validate(const ForwardBatch& batch) const {
  DS_CHECK(!batch.seqs.empty(), "forward: empty batch");
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceInput& in = batch.seqs[s];
    DS_CHECK(in.state != nullptr, "forward: sequence {} has no state", s);
    DS_CHECK(!in.tokens.empty(), "forward: sequence {} has no new tokens", s);
    DS_CHECK(in.state->kda.size() == size_t(cfg_.n_layer) && in.state->mla.size() == size_t(cfg_.n_layer),
             "forward: sequence {} state was not made for this model", s);
    for (size_t t = 0; t < in.tokens.size(); ++t)
      DS_CHECK(in.tokens[t] >= 0 && in.tokens[t] < cfg_.vocab_size,
               "forward: sequence {} token {} = {} is outside the vocabulary [0, {})", s, t, in.tokens[t],
               cfg_.vocab_size);
    int64_t prev = in.state->n_tokens;
    for (int64_t p : in.emit_state_at) {
      DS_CHECK(p > prev && p <= in.state->n_tokens + int64_t(in.tokens.size()),
               "forward: sequence {} checkpoint position {} not in ({}, {}] or not ascending", s, p, prev,
               in.state->n_tokens + int64_t(in.tokens.size()));
      prev = p;
    }
    for (size_t o = 0; o < s; ++o)
      DS_CHECK(batch.seqs[o].state != in.state, "forward: sequences {} and {} share one state", o, s);
    const int64_t length = in.state->n_tokens + int64_t(in.tokens.size());
    if (cfg_.max_position_tokens > 0 && length > cfg_.max_position_tokens)
      fail("forward: sequence {} would hold {} tokens, more than the model's maximum of {}", s, length,
           cfg_.max_position_tokens);
  }
  const int64_t need = forward_bytes_estimate(batch);
  const int64_t have = opt_.max_forward_bytes > 0 ? opt_.max_forward_bytes : available_memory_bytes();
  if (need > have)
    fail(
        "forward: this batch ({} sequences, {} new tokens) needs about {} of memory, more than the {} "
        "available",
        batch.seqs.size(),
        std::accumulate(batch.seqs.begin(), batch.seqs.end(), int64_t{0},
                        [](int64_t a, const SequenceInput& in) { return a + int64_t(in.tokens.size()); }),
        bytes_text(need), bytes_text(have));
}

// The token mixer of one layer on its normed input n f32 [T, D] -> y f32 [T, D].
void ModelRunner::run_mixer(int layer, const ForwardBatch& batch, const LayerBatch& lb, const float* n,
                            float* y, std::vector<std::vector<std::vector<KdaState>>>& emitted) const {
  const Block& blk = *blocks_[size_t(layer)];
  const int n_seq = lb.n_seq();
  if (blk.kind == LayerKind::Kda) {
    std::vector<KdaSeqIO> io(static_cast<size_t>(n_seq));
    std::vector<std::vector<int64_t>> rel(static_cast<size_t>(n_seq));
    for (int s = 0; s < n_seq; ++s) {
      const SequenceInput& in = batch.seqs[size_t(s)];
      for (int64_t p : in.emit_state_at) rel[size_t(s)].push_back(p - in.state->n_tokens);
      io[size_t(s)] = {&in.state->kda[size_t(layer)], rel[size_t(s)], &emitted[size_t(s)][size_t(layer)]};
    }
    blk.kda->forward(lb, io, n, y);
  } else {
    std::vector<MlaCache*> caches(static_cast<size_t>(n_seq));
    for (int s = 0; s < n_seq; ++s) caches[size_t(s)] = &batch.seqs[size_t(s)].state->mla[size_t(layer)];
    blk.mla->forward(lb, caches, n, y, opt_.mla_mode);
  }
}

// The FFN of one layer (dense MLP, MoE or LatentMoE) on its normed input n f32 [T, D] -> y.
void ModelRunner::run_ffn(int layer, const float* n, int64_t T, float* y) const {
  const Block& blk = *blocks_[size_t(layer)];
  if (blk.moe)
    blk.moe->forward(n, T, y);
  else
    blk.mlp.forward(n, T, y);
}

// Pre-norm residual wrapper (HF `modeling_kimi.py` decoder layer): x += Mixer(norm_in(x)); x +=
// FFN(norm_post(x)).
void ModelRunner::run_block(int layer, const ForwardBatch& batch, const LayerBatch& lb, float* x,
                            std::vector<std::vector<std::vector<KdaState>>>& emitted) const {
  const Block& blk = *blocks_[size_t(layer)];
  const int64_t T = lb.n_tokens(), D = cfg_.hidden;
  std::vector<float> n(size_t(T * D)), y(size_t(T * D));
  rmsnorm(f32_rows(x, T, D), f32_vec(blk.input_norm.data(), D), cfg_.rms_norm_eps, f32_rows(n.data(), T, D));
  run_mixer(layer, batch, lb, n.data(), y.data(), emitted);
  for (int64_t i = 0; i < T * D; ++i) x[i] += y[i];
  rmsnorm(f32_rows(x, T, D), f32_vec(blk.post_norm.data(), D), cfg_.rms_norm_eps, f32_rows(n.data(), T, D));
  run_ffn(layer, n.data(), T, y.data());
  for (int64_t i = 0; i < T * D; ++i) x[i] += y[i];
}

// K3 Block Attention Residuals: each sublayer reads a depth-softmax over the
// committed blocks and the partial sum P, and adds its output to P.
void ModelRunner::run_block_attn_res(int layer, const ForwardBatch& batch, const LayerBatch& lb,
                                     AttnResStream& st,
                                     std::vector<std::vector<std::vector<KdaState>>>& emitted) const {
  const Block& blk = *blocks_[size_t(layer)];
  const int64_t T = lb.n_tokens(), D = cfg_.hidden;
  std::vector<float> h(size_t(T * D)), y(size_t(T * D));
  st.attn_input(layer, h.data());
  rmsnorm(f32_rows(h.data(), T, D), f32_vec(blk.input_norm.data(), D), cfg_.rms_norm_eps,
          f32_rows(h.data(), T, D));
  run_mixer(layer, batch, lb, h.data(), y.data(), emitted);
  st.add_attn_output(layer, y.data());
  st.mlp_input(layer, h.data());
  rmsnorm(f32_rows(h.data(), T, D), f32_vec(blk.post_norm.data(), D), cfg_.rms_norm_eps,
          f32_rows(h.data(), T, D));
  run_ffn(layer, h.data(), T, y.data());
  st.add_mlp_output(layer, y.data());
}

ForwardResult ModelRunner::forward(const ForwardBatch& batch) const {
  validate(batch);
  const int64_t D = cfg_.hidden, V = cfg_.vocab_size;
  const int n_seq = int(batch.seqs.size());
  LayerBatch lb;
  for (const SequenceInput& in : batch.seqs) lb.add(int64_t(in.tokens.size()));
  const int64_t T = lb.n_tokens();

  std::vector<float> x(size_t(T * D));  // f32 [T, D] residual stream
  for (int s = 0; s < n_seq; ++s)
    for (int64_t i = 0; i < lb.len(s); ++i)
      weight_rows_to_f32(embed_, batch.seqs[size_t(s)].tokens[size_t(i)], 1,
                         x.data() + (lb.begin(s) + i) * D);

  ForwardResult r;
  // emitted[s][layer] = KDA states at the requested positions of sequence s.
  std::vector<std::vector<std::vector<KdaState>>> emitted(
      size_t(n_seq), std::vector<std::vector<KdaState>>(size_t(cfg_.n_layer)));
  if (cfg_.attn_res_block_size > 0) {
    // The layers pass the partial block sum P (captured as the layer output); the final mixer
    // over the committed blocks and P feeds the final norm.
    AttnResStream st(attn_res_, cfg_.attn_res_block_size, cfg_.rms_norm_eps, opt_.attn_res_mode);
    st.start(x.data(), T);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      run_block_attn_res(l, batch, lb, st, emitted);
      if (batch.capture_layer_outputs) r.layer_outputs.emplace_back(st.partial(), st.partial() + T * D);
    }
    st.final_output(x.data());
  } else {
    for (int l = 0; l < cfg_.n_layer; ++l) {
      run_block(l, batch, lb, x.data(), emitted);
      if (batch.capture_layer_outputs) r.layer_outputs.push_back(x);
    }
  }

  r.logits.resize(size_t(n_seq));
  r.checkpoints.resize(size_t(n_seq));
  // Sequences that want one logits row (decode, last-token prefill) share one lm_head product, so
  // the vocabulary matrix is read once per step, not once per sequence; the others get their own.
  std::vector<int> one_row;
  for (int s = 0; s < n_seq; ++s)
    if (batch.seqs[size_t(s)].logits == LogitsWant::Last) one_row.push_back(s);
  const int64_t n1 = int64_t(one_row.size());
  std::vector<float> h(size_t(n1 * D)), logits1(size_t(n1 * V));
  for (int64_t i = 0; i < n1; ++i)
    std::copy_n(x.data() + (lb.begin(one_row[size_t(i)]) + lb.len(one_row[size_t(i)]) - 1) * D, D,
                h.data() + i * D);
  rmsnorm(f32_rows(h.data(), n1, D), f32_vec(final_norm_.data(), D), cfg_.rms_norm_eps,
          f32_rows(h.data(), n1, D));
  if (n1 > 0)
    linear(f32_rows(h.data(), n1, lm_head_.cols), lm_head_, f32_rows(logits1.data(), n1, lm_head_.rows));
  for (int64_t i = 0; i < n1; ++i)
    r.logits[size_t(one_row[size_t(i)])].assign(logits1.begin() + i * V, logits1.begin() + (i + 1) * V);
  for (int s = 0; s < n_seq; ++s) {
    const SequenceInput& in = batch.seqs[size_t(s)];
    const int64_t n = lb.len(s);
    if (in.logits == LogitsWant::All) {
      h.resize(size_t(n * D));
      rmsnorm(f32_rows(x.data() + lb.begin(s) * D, n, D), f32_vec(final_norm_.data(), D), cfg_.rms_norm_eps,
              f32_rows(h.data(), n, D));
      r.logits[size_t(s)].resize(size_t(n * V));
      linear(f32_rows(h.data(), n, lm_head_.cols), lm_head_,
             f32_rows(r.logits[size_t(s)].data(), n, lm_head_.rows));
    }
    for (size_t e = 0; e < in.emit_state_at.size(); ++e) {
      KdaCheckpoint cp;
      cp.n_tokens = in.emit_state_at[e];
      cp.kda.resize(size_t(cfg_.n_layer));
      for (int l = 0; l < cfg_.n_layer; ++l)
        if (cfg_.layer_kind[size_t(l)] == LayerKind::Kda)
          cp.kda[size_t(l)] = std::move(emitted[size_t(s)][size_t(l)][e]);
      r.checkpoints[size_t(s)].push_back(std::move(cp));
    }
    in.state->n_tokens += n;
  }
  for (int s = 0; s < n_seq; ++s)
    for (float v : r.logits[size_t(s)])
      if (!std::isfinite(v))
        fail("forward: sequence {} has non-finite logits ({}): the weights or the inputs hold NaN or inf", s,
             v);
  return r;
}

}  // namespace ds
