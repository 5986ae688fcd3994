#include "model/weights.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/check.h"

namespace ds {

namespace {

using Shape = std::vector<int64_t>;

bool is_float(DType t) {
  return t == DType::BF16 || t == DType::F16 || t == DType::F32;
}

// Binds tensors by name through the WeightFiles (which records them as used) and checks dtypes.
class Binder {
 public:
  explicit Binder(const WeightFiles& ck) : ck_(ck) {}

  // A float tensor (BF16 / F16 / F32) of exactly `shape`.
  TensorRef f(const std::string& name, const Shape& shape) const {
    const TensorRef& t = ck_.get(name, shape);
    if (!is_float(t.dtype))
      fail("checkpoint: tensor `{}` has dtype {}, expected BF16, F16 or F32", name, dtype_name(t.dtype));
    return t;
  }

  // A U8 tensor of exactly `shape` (MXFP4 packed values / E8M0 scales).
  TensorRef u8(const std::string& name, const Shape& shape) const {
    const TensorRef& t = ck_.get(name, shape);
    if (t.dtype != DType::U8)
      fail("checkpoint: tensor `{}` has dtype {}, expected U8", name, dtype_name(t.dtype));
    return t;
  }

  std::optional<TensorRef> f_if(bool want, const std::string& name, const Shape& shape) const {
    if (!want) return std::nullopt;
    return f(name, shape);
  }

  // A_log: [1, 1, H, 1] or [H] (exact), or 1-D [N > H] (K3 pads to 128; the first H are used).
  TensorRef a_log(const std::string& name, int64_t n_head) const {
    const TensorRef& t = ck_.require(name);
    const bool exact4 = t.shape == Shape{1, 1, n_head, 1};
    const bool padded1 = t.shape.size() == 1 && t.shape[0] >= n_head;
    if (!exact4 && !padded1)
      fail("checkpoint: tensor `{}` has shape {}, expected [1, 1, {}, 1] or [N >= {}]", name, t.shape_str(),
           n_head, n_head);
    if (!is_float(t.dtype))
      fail("checkpoint: tensor `{}` has dtype {}, expected BF16, F16 or F32", name, dtype_name(t.dtype));
    return t;
  }

  // `<base>.weight` (dense), or `<base>.weight_packed` + `<base>.weight_scale` (MXFP4) when allowed.
  LinearWeight linear(const std::string& base, int64_t out, int64_t in, bool allow_mxfp4) const {
    LinearWeight w;
    w.out = out;
    w.in = in;
    if (allow_mxfp4 && !ck_.find(base + ".weight") && ck_.find(base + ".weight_packed")) {
      if (in % 32 != 0)
        fail("checkpoint: MXFP4 tensor `{}.weight_packed` needs in_features % 32 == 0, got {}", base, in);
      w.weight = u8(base + ".weight_packed", {out, in / 2});
      w.scale = u8(base + ".weight_scale", {out, in / 32});
      if (ck_.find(base + ".weight_shape")) ck_.get(base + ".weight_shape", {2});  // compressed-tensors extra
      return w;
    }
    w.weight = f(base + ".weight", {out, in});
    return w;
  }

  DenseMlpWeights mlp(const std::string& p, int64_t inter, int64_t d) const {
    return {f(p + "gate_proj.weight", {inter, d}), f(p + "up_proj.weight", {inter, d}),
            f(p + "down_proj.weight", {d, inter})};
  }

  AttnResWeights attn_res(const std::string& p, int64_t d) const {
    return {f(p + "_norm.weight", {d}), f(p + "_proj.weight", {1, d})};
  }

  const WeightFiles& ck() const { return ck_; }

 private:
  const WeightFiles& ck_;
};

KdaWeights bind_kda(const Binder& b, const ModelConfig& c, const std::string& p) {
  const int64_t d = c.hidden, h = c.kda.n_head, k = c.kda.head_dim, hk = h * k, w = c.kda.conv_kernel;
  KdaWeights kw;
  kw.q_proj = b.f(p + "q_proj.weight", {hk, d});
  kw.k_proj = b.f(p + "k_proj.weight", {hk, d});
  kw.v_proj = b.f(p + "v_proj.weight", {hk, d});
  kw.q_conv = b.f(p + "q_conv1d.weight", {hk, 1, w});
  kw.k_conv = b.f(p + "k_conv1d.weight", {hk, 1, w});
  kw.v_conv = b.f(p + "v_conv1d.weight", {hk, 1, w});
  kw.f_a_proj = b.f(p + "f_a_proj.weight", {k, d});
  kw.f_b_proj = b.f(p + "f_b_proj.weight", {hk, k});
  kw.a_log = b.a_log(p + "A_log", h);
  kw.dt_bias = b.f(p + "dt_bias", {hk});
  kw.b_proj = b.f(p + "b_proj.weight", {h, d});
  const bool full = c.kda.full_rank_output_gate;
  kw.g_proj = b.f_if(full, p + "g_proj.weight", {hk, d});
  kw.g_a_proj = b.f_if(!full, p + "g_a_proj.weight", {k, d});
  kw.g_b_proj = b.f_if(!full, p + "g_b_proj.weight", {hk, k});
  kw.o_norm = b.f(p + "o_norm.weight", {k});
  kw.o_proj = b.f(p + "o_proj.weight", {d, hk});
  return kw;
}

MlaWeights bind_mla(const Binder& b, const ModelConfig& c, const std::string& p) {
  const MlaConfig& m = c.mla;
  const int64_t d = c.hidden, hm = m.n_head, q = m.qk_head_dim(), lora = m.q_lora_rank;
  MlaWeights mw;
  mw.q_proj = b.f_if(lora == 0, p + "q_proj.weight", {hm * q, d});
  mw.q_a_proj = b.f_if(lora > 0, p + "q_a_proj.weight", {lora, d});
  mw.q_a_layernorm = b.f_if(lora > 0, p + "q_a_layernorm.weight", {lora});
  mw.q_b_proj = b.f_if(lora > 0, p + "q_b_proj.weight", {hm * q, lora});
  mw.kv_a_proj = b.f(p + "kv_a_proj_with_mqa.weight", {int64_t(m.kv_lora_rank) + m.qk_rope_head_dim, d});
  mw.kv_a_layernorm = b.f(p + "kv_a_layernorm.weight", {m.kv_lora_rank});
  mw.kv_b_proj = b.f(p + "kv_b_proj.weight", {hm * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank});
  mw.g_proj = b.f_if(m.output_gate, p + "g_proj.weight", {hm * m.v_head_dim, d});
  mw.o_proj = b.f(p + "o_proj.weight", {d, hm * m.v_head_dim});
  return mw;
}

MoeWeights bind_moe(const Binder& b, const ModelConfig& c, const std::string& p) {
  const MoeConfig& m = c.moe;
  const int64_t d = c.hidden, e = m.n_expert, inter = m.expert_intermediate;
  const bool latent = m.latent_dim > 0;
  const int64_t in = latent ? m.latent_dim : d;
  MoeWeights mw;
  mw.gate = b.f(p + "gate.weight", {e, d});
  mw.e_score_correction_bias = b.f(p + "gate.e_score_correction_bias", {e});
  mw.experts.reserve(size_t(e));
  for (int64_t x = 0; x < e; ++x) {
    const std::string ep = fmt::format("{}experts.{}.", p, x);
    mw.experts.push_back({b.linear(ep + "w1", inter, in, true), b.linear(ep + "w3", inter, in, true),
                          b.linear(ep + "w2", in, inter, true)});
  }
  if (m.n_shared_expert > 0) mw.shared = b.mlp(p + "shared_experts.", inter * m.n_shared_expert, d);
  mw.latent_down = b.f_if(latent, p + "routed_expert_down_proj.weight", {m.latent_dim, d});
  mw.latent_norm = b.f_if(latent && m.latent_norm, p + "routed_expert_norm.weight", {m.latent_dim});
  mw.latent_up = b.f_if(latent, p + "routed_expert_up_proj.weight", {d, m.latent_dim});
  return mw;
}

LayerWeights bind_layer(const Binder& b, const ModelConfig& c, int i) {
  const std::string p = fmt::format("model.layers.{}.", i);
  const int64_t d = c.hidden;
  LayerWeights lw;
  lw.kind = c.layer_kind[size_t(i)];
  lw.input_layernorm = b.f(p + "input_layernorm.weight", {d});
  lw.post_attention_layernorm = b.f(p + "post_attention_layernorm.weight", {d});
  if (lw.kind == LayerKind::Kda) {
    lw.kda = bind_kda(b, c, p + "self_attn.");
  } else {
    lw.mla = bind_mla(b, c, p + "self_attn.");
  }
  if (c.is_moe_layer(i)) {
    lw.moe = bind_moe(b, c, p + "block_sparse_moe.");
  } else {
    lw.mlp = b.mlp(p + "mlp.", c.dense_intermediate, d);
  }
  if (c.attn_res_block_size > 0) {
    lw.attn_res = b.attn_res(p + "self_attention_res", d);
    lw.mlp_res = b.attn_res(p + "mlp_res", d);
  }
  return lw;
}

// Every tensor must be bound, except those outside the text model's prefix (vision tower).
void check_extras(const WeightFiles& ck, ModelWeights& w) {
  std::vector<std::string> extra;
  size_t ignored = 0;
  for (const std::string& n : ck.unused_names()) {
    if (ck.is_unprefixed(n)) {
      ++ignored;
    } else {
      extra.push_back(n);
    }
  }
  if (!extra.empty()) {
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 5; ++i) list += (i ? ", `" : "`") + extra[i] + "`";
    fail("checkpoint: {} extra tensor(s) not used by the config: {}{}", extra.size(), list,
         extra.size() > 5 ? ", ..." : "");
  }
  if (ignored > 0)
    w.notes.push_back(
        fmt::format("ignored {} tensor(s) outside the text model (vision tower / projector)", ignored));
}

}  // namespace

ModelWeights ModelWeights::bind(const ModelConfig& cfg, const WeightFiles& ck) {
  const Binder b(ck);
  const int64_t d = cfg.hidden, v = cfg.vocab_size;
  ModelWeights w;
  w.embed = b.f("model.embed_tokens.weight", {v, d});
  w.layers.reserve(size_t(cfg.n_layer));
  for (int i = 0; i < cfg.n_layer; ++i) w.layers.push_back(bind_layer(b, cfg, i));
  w.final_norm = b.f("model.norm.weight", {d});
  if (cfg.tie_word_embeddings && !ck.find("lm_head.weight")) {
    w.lm_head = w.embed;
  } else {
    w.lm_head = b.f("lm_head.weight", {v, d});
  }
  if (cfg.attn_res_block_size > 0) w.output_res = b.attn_res("model.output_attn_res", d);
  check_extras(ck, w);
  if (cfg.has_vision_config && w.notes.empty())
    w.notes.push_back("config has a vision tower (vision_config); only the text model is loaded");
  for (const std::string& n : w.notes) std::fprintf(stderr, "deltaserve: note: %s\n", n.c_str());
  return w;
}

}  // namespace ds
