#include "runner/model_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <variant>

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

// One decoder layer: the token mixer is KDA or MLA, the FFN a routed MoE (K3: with latent
// projections / MXFP4 experts) or a dense GLU MLP.
struct ModelRunner::Block {
  std::vector<float> input_norm;  // f32 [D]
  std::vector<float> post_norm;   // f32 [D]
  std::variant<KdaLayer, MlaLayer> mixer;
  std::variant<MoeLayer, GluMlp> ffn;
};

ModelRunner::~ModelRunner() = default;

const KdaLayer* ModelRunner::kda_layer(int layer) const {
  DS_CHECK(layer >= 0 && layer < cfg_.n_layer, "kda_layer: layer {} not in [0, {})", layer, cfg_.n_layer);
  return std::get_if<KdaLayer>(&blocks_[size_t(layer)]->mixer);
}

KdaStateShape ModelRunner::kda_state_shape() const {
  return {int(cfg_.kda.n_head), int(cfg_.kda.head_dim), int(cfg_.kda.conv_kernel) - 1};
}

std::unique_ptr<ModelRunner> ModelRunner::load(const std::string& dir, RunnerOptions opt) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    fail("model {} is a file; expected a checkpoint folder (config.json + *.safetensors)", dir);
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  r->cfg_ = ModelConfig::load(dir);
  r->opt_ = opt;
  const ModelConfig& cfg = r->cfg_;
  auto loaded = std::make_shared<LoadedWeightFiles>(LoadedWeightFiles{
      WeightFiles::open(dir, cfg.multimodal_wrapper ? "language_model." : "", false, opt.weights), {}});
  loaded->w = ModelWeights::bind(cfg, loaded->ck);
  const ModelWeights& w = loaded->w;
  r->embed_ = view2d(w.embed);
  r->lm_head_ = view2d(w.lm_head);
  r->final_norm_ = to_f32(w.final_norm);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerWeights& lw = w.layers[size_t(l)];
    auto mixer = [&]() -> std::variant<KdaLayer, MlaLayer> {
      if (cfg.layer_kind[size_t(l)] == LayerKind::Kda)
        return KdaLayer(cfg.kda, cfg.rms_norm_eps, cfg.hidden, kda_params(cfg, *lw.kda), opt.kda);
      return MlaLayer(cfg.mla, cfg.hidden, mla_params(*lw.mla));
    };
    auto ffn = [&]() -> std::variant<MoeLayer, GluMlp> {
      if (lw.moe) return MoeLayer(cfg.moe, cfg.rms_norm_eps, moe_params(cfg, *lw.moe));
      DS_CHECK(lw.mlp.has_value(), "{}: layer {} has neither an MoE nor a dense MLP", dir, l);
      GluMlp mlp = glu(*lw.mlp, cfg);
      mlp.validate("dense mlp");
      return mlp;
    };
    r->blocks_.push_back(std::make_unique<Block>(
        Block{to_f32(lw.input_layernorm), to_f32(lw.post_attention_layernorm), mixer(), ffn()}));
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

// Bytes a forward allocates, from its shape: activations and temporaries per new token, logits
// rows, the expanded K/V of the longest MLA context, emitted checkpoints.
int64_t ModelRunner::forward_bytes_estimate(std::span<const StepShape> seqs) const {
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
  for (const StepShape& in : seqs) {
    floats += in.n_new * per_token;
    floats += (in.logits == LogitsWant::All ? in.n_new : in.logits == LogitsWant::Last ? 1 : 0) * V;
    max_context = std::max(max_context, in.n_context + in.n_new);
    state_floats += in.n_emit * kda_state * cfg_.n_kda_layers();
  }
  // MLA prefill expands the cached latents of one sequence into per-head K and V at a time.
  floats += max_context * mla_kv;
  return 4 * (floats + state_floats);
}

int64_t ModelRunner::forward_bytes_estimate(const ForwardBatch& batch) const {
  std::vector<StepShape> shapes;
  for (const SequenceInput& in : batch.seqs)
    shapes.push_back({int64_t(in.tokens.size()), in.state ? in.state->n_tokens : 0, in.logits,
                      int64_t(in.emit_state_at.size())});
  return forward_bytes_estimate(shapes);
}

// Whether a forward of this shape fits in the memory this process may use (ds::Error if not).
void ModelRunner::check_memory(std::span<const StepShape> seqs) const {
  const int64_t need = forward_bytes_estimate(seqs);
  const int64_t have = opt_.max_forward_bytes > 0 ? opt_.max_forward_bytes : available_memory_bytes();
  if (need > have) {
    int64_t n_new = 0;
    for (const StepShape& in : seqs) n_new += in.n_new;
    fail(
        "forward: this batch ({} sequences, {} new tokens) needs about {} of memory, more than the {} "
        "available",
        seqs.size(), n_new, bytes_text(need), bytes_text(have));
  }
}

// Token ids and checkpoint positions of sequence s (shared by both forward forms).
void ModelRunner::check_inputs(size_t s, std::span<const int32_t> tokens, int64_t n_tokens,
                               std::span<const int64_t> emit_state_at) const {
  DS_CHECK(!tokens.empty(), "forward: sequence {} has no new tokens", s);
  for (size_t t = 0; t < tokens.size(); ++t)
    DS_CHECK(tokens[t] >= 0 && tokens[t] < cfg_.vocab_size,
             "forward: sequence {} token {} = {} is outside the vocabulary [0, {})", s, t, tokens[t],
             cfg_.vocab_size);
  int64_t prev = n_tokens;
  for (int64_t p : emit_state_at) {
    DS_CHECK(p > prev && p <= n_tokens + int64_t(tokens.size()),
             "forward: sequence {} checkpoint position {} not in ({}, {}] or not ascending", s, p, prev,
             n_tokens + int64_t(tokens.size()));
    prev = p;
  }
  const int64_t length = n_tokens + int64_t(tokens.size());
  if (cfg_.max_position_tokens > 0 && length > cfg_.max_position_tokens)
    fail("forward: sequence {} would hold {} tokens, more than the model's maximum of {}", s, length,
         cfg_.max_position_tokens);
}

void ModelRunner::validate(const ForwardStep& step) const {
  DS_CHECK(!step.seqs.empty(), "forward: empty batch");
  const KdaStateShape kda_shape = kda_state_shape();
  std::vector<const float*> live;                       // first KDA layer's S of each sequence
  std::vector<std::pair<const float*, int32_t>> pages;  // (pool, page) written by each sequence
  for (size_t s = 0; s < step.seqs.size(); ++s) {
    const SequenceStep& in = step.seqs[s];
    const SequenceView& v = in.state;
    check_inputs(s, in.tokens, v.n_tokens, in.emit_state_at);
    DS_CHECK(v.kda.size() == size_t(cfg_.n_layer) && v.mla.size() == size_t(cfg_.n_layer) &&
                 in.emit_to.size() == in.emit_state_at.size(),
             "forward: sequence {} state views were not made for this model", s);
    const int64_t n_new = int64_t(in.tokens.size());
    for (int l = 0; l < cfg_.n_layer; ++l) {
      if (cfg_.layer_kind[size_t(l)] == LayerKind::Kda) {
        DS_CHECK(v.kda[size_t(l)].valid() && v.kda[size_t(l)].shape == kda_shape,
                 "forward: sequence {} has no KDA state for layer {}", s, l);
        for (const auto& e : in.emit_to)
          DS_CHECK(
              e.size() == size_t(cfg_.n_layer) && e[size_t(l)].valid() && e[size_t(l)].shape == kda_shape,
              "forward: sequence {} has no checkpoint destination for layer {}", s, l);
        if (live.size() == s) live.push_back(v.kda[size_t(l)].S);
      } else {
        const MlaLatentPages& m = v.mla[size_t(l)];
        DS_CHECK(m.pool != nullptr && m.latent_dim == cfg_.mla.latent_dim() && m.n_tokens == v.n_tokens &&
                     m.page_tokens > 0 && m.capacity() >= v.n_tokens + n_new,
                 "forward: sequence {} latent pages of layer {} cannot hold {} tokens", s, l,
                 v.n_tokens + n_new);
        for (int64_t p = v.n_tokens / m.page_tokens; p * m.page_tokens < v.n_tokens + n_new; ++p)
          pages.emplace_back(m.pool, m.pages[size_t(p)]);
      }
    }
  }
  std::sort(live.begin(), live.end());
  DS_CHECK(std::adjacent_find(live.begin(), live.end()) == live.end(),
           "forward: two sequences share one state");
  std::sort(pages.begin(), pages.end());
  DS_CHECK(std::adjacent_find(pages.begin(), pages.end()) == pages.end(),
           "forward: two sequences (or layers) write the same latent page");
  std::vector<StepShape> shapes;
  for (const SequenceStep& in : step.seqs)
    shapes.push_back(
        {int64_t(in.tokens.size()), in.state.n_tokens, in.logits, int64_t(in.emit_state_at.size())});
  check_memory(shapes);
}

// The token mixer of one layer on its normed input n f32 [T, D] -> y f32 [T, D].
void ModelRunner::run_mixer(int layer, const ForwardStep& step, const LayerBatch& lb, const float* n,
                            float* y) const {
  const Block& blk = *blocks_[size_t(layer)];
  const size_t n_seq = size_t(lb.n_seq());
  if (const KdaLayer* kda = std::get_if<KdaLayer>(&blk.mixer)) {
    std::vector<KdaSeqIO> io(n_seq);
    std::vector<std::vector<int64_t>> rel(n_seq);
    std::vector<std::vector<KdaStateView>> to(n_seq);
    for (size_t s = 0; s < n_seq; ++s) {
      const SequenceStep& in = step.seqs[s];
      for (size_t e = 0; e < in.emit_state_at.size(); ++e) {
        rel[s].push_back(in.emit_state_at[e] - in.state.n_tokens);
        to[s].push_back(in.emit_to[e][size_t(layer)]);
      }
      io[s] = {in.state.kda[size_t(layer)], rel[s], to[s]};
    }
    kda->forward(lb, io, n, y);
  } else {
    std::vector<MlaLatentPages> latents(n_seq);
    for (size_t s = 0; s < n_seq; ++s) latents[s] = step.seqs[s].state.mla[size_t(layer)];
    std::get<MlaLayer>(blk.mixer).forward(lb, latents, n, y, opt_.mla_mode);
  }
}

// The FFN of one layer (dense MLP or MoE) on its normed input n f32 [T, D] -> y.
void ModelRunner::run_ffn(int layer, const float* n, int64_t T, float* y) const {
  std::visit([&](const auto& ffn) { ffn.forward(n, T, y); }, blocks_[size_t(layer)]->ffn);
}

// Pre-norm residual wrapper (HF `modeling_kimi.py` decoder layer): x += Mixer(norm_in(x)); x +=
// FFN(norm_post(x)).
void ModelRunner::run_block(int layer, const ForwardStep& step, const LayerBatch& lb, float* x) const {
  const Block& blk = *blocks_[size_t(layer)];
  const int64_t T = lb.n_tokens(), D = cfg_.hidden;
  std::vector<float> n(size_t(T * D)), y(size_t(T * D));
  rmsnorm(f32_rows(x, T, D), f32_vec(blk.input_norm.data(), D), cfg_.rms_norm_eps, f32_rows(n.data(), T, D));
  run_mixer(layer, step, lb, n.data(), y.data());
  for (int64_t i = 0; i < T * D; ++i) x[i] += y[i];
  rmsnorm(f32_rows(x, T, D), f32_vec(blk.post_norm.data(), D), cfg_.rms_norm_eps, f32_rows(n.data(), T, D));
  run_ffn(layer, n.data(), T, y.data());
  for (int64_t i = 0; i < T * D; ++i) x[i] += y[i];
}

// K3 Block Attention Residuals: each sublayer reads a depth-softmax over the
// committed blocks and the partial sum P, and adds its output to P.
void ModelRunner::run_block_attn_res(int layer, const ForwardStep& step, const LayerBatch& lb,
                                     AttnResStream& st) const {
  const Block& blk = *blocks_[size_t(layer)];
  const int64_t T = lb.n_tokens(), D = cfg_.hidden;
  std::vector<float> h(size_t(T * D)), y(size_t(T * D));
  st.attn_input(layer, h.data());
  rmsnorm(f32_rows(h.data(), T, D), f32_vec(blk.input_norm.data(), D), cfg_.rms_norm_eps,
          f32_rows(h.data(), T, D));
  run_mixer(layer, step, lb, h.data(), y.data());
  st.add_attn_output(layer, y.data());
  st.mlp_input(layer, h.data());
  rmsnorm(f32_rows(h.data(), T, D), f32_vec(blk.post_norm.data(), D), cfg_.rms_norm_eps,
          f32_rows(h.data(), T, D));
  run_ffn(layer, h.data(), T, y.data());
  st.add_mlp_output(layer, y.data());
}

ForwardResult ModelRunner::forward(const ForwardStep& step) const {
  validate(step);
  const int64_t D = cfg_.hidden, V = cfg_.vocab_size;
  const int n_seq = int(step.seqs.size());
  LayerBatch lb;
  for (const SequenceStep& in : step.seqs) lb.add(int64_t(in.tokens.size()));
  const int64_t T = lb.n_tokens();

  std::vector<float> x(size_t(T * D));  // f32 [T, D] residual stream
  for (int s = 0; s < n_seq; ++s)
    for (int64_t i = 0; i < lb.len(s); ++i)
      weight_rows_to_f32(embed_, step.seqs[size_t(s)].tokens[size_t(i)], 1, x.data() + (lb.begin(s) + i) * D);

  ForwardResult r;
  if (cfg_.attn_res_block_size > 0) {
    // The layers pass the partial block sum P (captured as the layer output); the final mixer
    // over the committed blocks and P feeds the final norm.
    AttnResStream st(attn_res_, cfg_.attn_res_block_size, cfg_.rms_norm_eps, opt_.attn_res_mode);
    st.start(x.data(), T);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      run_block_attn_res(l, step, lb, st);
      if (step.capture_layer_outputs) r.layer_outputs.emplace_back(st.partial(), st.partial() + T * D);
    }
    st.final_output(x.data());
  } else {
    for (int l = 0; l < cfg_.n_layer; ++l) {
      run_block(l, step, lb, x.data());
      if (step.capture_layer_outputs) r.layer_outputs.push_back(x);
    }
  }

  r.logits.resize(size_t(n_seq));
  // Sequences that want one logits row (decode, last-token prefill) share one lm_head product, so
  // the vocabulary matrix is read once per step, not once per sequence; the others get their own.
  std::vector<int> one_row;
  for (int s = 0; s < n_seq; ++s)
    if (step.seqs[size_t(s)].logits == LogitsWant::Last) one_row.push_back(s);
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
    const SequenceStep& in = step.seqs[size_t(s)];
    const int64_t n = lb.len(s);
    if (in.logits == LogitsWant::All) {
      h.resize(size_t(n * D));
      rmsnorm(f32_rows(x.data() + lb.begin(s) * D, n, D), f32_vec(final_norm_.data(), D), cfg_.rms_norm_eps,
              f32_rows(h.data(), n, D));
      r.logits[size_t(s)].resize(size_t(n * V));
      linear(f32_rows(h.data(), n, lm_head_.cols), lm_head_,
             f32_rows(r.logits[size_t(s)].data(), n, lm_head_.rows));
    }
  }
  for (int s = 0; s < n_seq; ++s)
    for (float v : r.logits[size_t(s)])
      if (!std::isfinite(v))
        fail("forward: sequence {} has non-finite logits ({}): the weights or the inputs hold NaN or inf", s,
             v);
  return r;
}

ForwardResult ModelRunner::forward(const ForwardBatch& batch) const {
  DS_CHECK(!batch.seqs.empty(), "forward: empty batch");
  for (size_t s = 0; s < batch.seqs.size(); ++s) {  // everything that can fail, before any state grows
    const SequenceInput& in = batch.seqs[s];
    DS_CHECK(in.state != nullptr, "forward: sequence {} has no state", s);
    DS_CHECK(in.state->kda.size() == size_t(cfg_.n_layer) && in.state->mla.size() == size_t(cfg_.n_layer),
             "forward: sequence {} state was not made for this model", s);
    check_inputs(s, in.tokens, in.state->n_tokens, in.emit_state_at);
    for (size_t o = 0; o < s; ++o)
      DS_CHECK(batch.seqs[o].state != in.state, "forward: sequences {} and {} share one state", o, s);
  }
  std::vector<StepShape> shapes;
  for (const SequenceInput& in : batch.seqs)
    shapes.push_back(
        {int64_t(in.tokens.size()), in.state->n_tokens, in.logits, int64_t(in.emit_state_at.size())});
  check_memory(shapes);
  ForwardStep step;
  step.capture_layer_outputs = batch.capture_layer_outputs;
  std::vector<std::vector<KdaCheckpoint>> checkpoints(batch.seqs.size());
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceInput& in = batch.seqs[s];
    SequenceState& st = *in.state;
    SequenceStep seq{in.tokens, {st.n_tokens, {}, {}}, in.logits, in.emit_state_at, {}};
    seq.state.kda.resize(size_t(cfg_.n_layer));
    seq.state.mla.resize(size_t(cfg_.n_layer));
    for (int64_t p : in.emit_state_at) {
      KdaCheckpoint cp;
      cp.n_tokens = p;
      cp.kda.resize(size_t(cfg_.n_layer));
      checkpoints[s].push_back(std::move(cp));
    }
    seq.emit_to.assign(in.emit_state_at.size(), std::vector<KdaStateView>(size_t(cfg_.n_layer)));
    for (int l = 0; l < cfg_.n_layer; ++l) {
      if (cfg_.layer_kind[size_t(l)] != LayerKind::Kda) {
        seq.state.mla[size_t(l)] = st.mla[size_t(l)].pages(int64_t(in.tokens.size()));
        continue;
      }
      seq.state.kda[size_t(l)] = st.kda[size_t(l)].view();
      for (size_t e = 0; e < checkpoints[s].size(); ++e) {
        KdaState& k = checkpoints[s][e].kda[size_t(l)];
        k.init(cfg_.kda.n_head, cfg_.kda.head_dim, cfg_.kda.conv_kernel);
        seq.emit_to[e][size_t(l)] = k.view();
      }
    }
    step.seqs.push_back(std::move(seq));
  }
  ForwardResult r = forward(step);
  for (const SequenceInput& in : batch.seqs) {
    const int64_t n = int64_t(in.tokens.size());
    in.state->n_tokens += n;
    for (MlaLatentStore& m : in.state->mla)
      if (m.latent_dim > 0) m.n_tokens += n;
  }
  r.checkpoints = std::move(checkpoints);
  return r;
}

}  // namespace ds
