#include "gpu/device_weights.h"

#include <cstring>

#include "core/check.h"
#include "layers/attn_res.h"

namespace ds {

std::string_view precision_name(Precision p) {
  return p == Precision::BF16 ? "bf16" : "f32";
}

ExpertAct expert_act(const ModelConfig& cfg) {
  ExpertAct a;
  a.situ = cfg.act == Activation::Situ, a.beta = cfg.situ_beta, a.linear_beta = cfg.situ_linear_beta;
  return a;
}

GroupedExperts grouped_table(
    const std::vector<DeviceGlu>& experts, const ExpertAct& act,
    const std::function<const void* const*(const std::vector<const void*>&)>& store) {
  GroupedExperts g;
  if (experts.empty()) return g;
  const ExpertLinear& l0 = experts[0].gate;
  const bool mx = l0.is_mxfp4();
  const DType dt = mx ? DType::U8 : l0.dense.dtype;
  const int64_t E = int64_t(experts.size()), I = l0.rows(), D = l0.cols();
  std::vector<const void*> p(size_t(3 * E)), s(mx ? size_t(3 * E) : 0);
  for (int64_t e = 0; e < E; ++e) {
    const DeviceGlu& x = experts[size_t(e)];
    const ExpertLinear* m[3] = {&x.gate, &x.up, &x.down};
    for (int w = 0; w < 3; ++w) {
      if (m[w]->is_mxfp4() != mx || (!mx && m[w]->dense.dtype != dt)) return g;
      p[size_t(w * E + e)] = mx ? static_cast<const void*>(m[w]->mxfp4.packed) : m[w]->dense.data;
      if (mx) s[size_t(w * E + e)] = m[w]->mxfp4.scale;
    }
    if (x.gate.rows() != I || x.up.rows() != I || x.gate.cols() != D || x.up.cols() != D ||
        x.down.rows() != D || x.down.cols() != I)
      return g;
  }
  g.ptrs = store(p);
  if (mx) g.scales = store(s);
  g.dtype = dt, g.E = E, g.I = I, g.D = D, g.device = l0.device(), g.act = act;
  return g;
}

// Uploads tensors one by one into buffers owned by the DeviceWeights, counting bytes per part.
class WeightUploader {
 public:
  WeightUploader(DeviceWeights& dw, int64_t total, const std::function<void(int64_t, int64_t)>& progress)
      : dw_(dw), total_(total), progress_(progress) {}

  std::string part = "other";

  // A matrix [rows, numel / rows] in the GEMM precision.
  WeightView matrix(const TensorRef& t) {
    DS_CHECK(!t.shape.empty() && t.shape[0] > 0, "upload: tensor {} has shape {}", t.name, t.shape_str());
    const int64_t rows = t.shape[0], cols = t.numel() / rows;
    const DType dt = dw_.precision == Precision::BF16 ? DType::BF16 : DType::F32;
    const void* p = nullptr;
    if (dt == DType::BF16 && t.dtype == DType::BF16) {
      p = raw(t.data, int64_t(t.n_bytes));
    } else {
      const std::vector<float> f = tensor_to_f32(t);
      if (dt == DType::F32) {
        p = raw(f.data(), int64_t(f.size() * sizeof(float)));
      } else {
        std::vector<uint16_t> b(f.size());
        for (size_t i = 0; i < f.size(); ++i) b[i] = f32_to_bf16(f[i]);
        p = raw(b.data(), int64_t(b.size() * sizeof(uint16_t)));
      }
    }
    done(int64_t(t.n_bytes));
    return WeightView{p, dt, rows, cols, dw_.device};
  }

  // A host f32 matrix [rows, cols] in the GEMM precision (derived weights: W_UKᵀ).
  WeightView matrix(const std::vector<float>& f, int64_t rows, int64_t cols) {
    if (dw_.precision == Precision::F32)
      return WeightView{raw(f.data(), int64_t(f.size() * 4)), DType::F32, rows, cols, dw_.device};
    std::vector<uint16_t> b(f.size());
    for (size_t i = 0; i < f.size(); ++i) b[i] = f32_to_bf16(f[i]);
    return WeightView{raw(b.data(), int64_t(b.size() * 2)), DType::BF16, rows, cols, dw_.device};
  }

  // The first n values (n < 0: all) of a small parameter as f32 [n].
  TensorView vec(const TensorRef& t, int64_t n = -1) {
    std::vector<float> f = tensor_to_f32(t);
    if (n >= 0) {
      DS_CHECK(n <= int64_t(f.size()), "upload: tensor {} has {} values, need {}", t.name, f.size(), n);
      f.resize(size_t(n));
    }
    done(int64_t(t.n_bytes));
    return vec(f);
  }
  TensorView vec(const std::vector<float>& f) {
    return TensorView::contiguous(const_cast<void*>(raw(f.data(), int64_t(f.size() * 4))), DType::F32,
                                  {int64_t(f.size())}, dw_.device);
  }

  // A routed expert's projection: dense in the GEMM precision, or MXFP4 kept packed.
  ExpertLinear expert(const LinearWeight& w) {
    if (!w.is_mxfp4()) return matrix(w.weight);
    const void* packed = raw(w.weight.data, int64_t(w.weight.n_bytes));
    const void* scale = raw(w.scale->data, int64_t(w.scale->n_bytes));
    done(int64_t(w.weight.n_bytes + w.scale->n_bytes));
    return Mxfp4View{static_cast<const uint8_t*>(packed), static_cast<const uint8_t*>(scale), w.out, w.in,
                     dw_.device};
  }

  // A device copy of host pointers (the grouped experts' table).
  const void* const* pointers(const std::vector<const void*>& p) {
    return static_cast<const void* const*>(raw(p.data(), int64_t(p.size() * sizeof(void*))));
  }

  DeviceGlu glu(const DenseMlpWeights& w) {
    return {matrix(w.gate_proj), matrix(w.up_proj), matrix(w.down_proj)};
  }

 private:
  const void* raw(const void* host, int64_t bytes) {
    Buffer b(dw_.device, bytes);
    b.upload(host, bytes);
    dw_.parts_[part] += bytes;
    dw_.storage_.push_back(std::move(b));
    return dw_.storage_.back().data();
  }
  void done(int64_t bytes) {
    done_ += bytes;
    if (progress_) progress_(done_, total_);
  }

  DeviceWeights& dw_;
  int64_t total_ = 0, done_ = 0;
  const std::function<void(int64_t, int64_t)>& progress_;
};

namespace {

int64_t checkpoint_bytes(const ModelWeights& w) {
  int64_t n = int64_t(w.embed.n_bytes + w.lm_head.n_bytes);
  for (const LayerWeights& l : w.layers) {
    if (l.moe)
      for (const ExpertWeights& e : l.moe->experts)
        for (const LinearWeight* p : {&e.w1, &e.w3, &e.w2})
          n += int64_t(p->weight.n_bytes + (p->scale ? p->scale->n_bytes : 0));
  }
  return n;  // the bulk; the small tensors only move the bar a little past the end
}

DeviceKda upload_kda(WeightUploader& up, const ModelConfig& cfg, const KdaWeights& w) {
  const int64_t H = cfg.kda.n_head;
  DeviceKda d;
  d.q = up.matrix(w.q_proj), d.k = up.matrix(w.k_proj), d.v = up.matrix(w.v_proj);
  d.f_a = up.matrix(w.f_a_proj), d.f_b = up.matrix(w.f_b_proj), d.b = up.matrix(w.b_proj);
  if (cfg.kda.full_rank_output_gate) {
    DS_CHECK(w.g_proj.has_value(), "kda layer {}: no full-rank g_proj", w.q_proj.name);
    d.g = up.matrix(*w.g_proj);
  } else {
    DS_CHECK(w.g_a_proj && w.g_b_proj, "kda layer {}: no low-rank g_a_proj / g_b_proj", w.q_proj.name);
    d.g_a = up.matrix(*w.g_a_proj), d.g_b = up.matrix(*w.g_b_proj);
  }
  d.o = up.matrix(w.o_proj);
  std::vector<float> taps;
  for (const TensorRef* t : {&w.q_conv, &w.k_conv, &w.v_conv}) {
    const std::vector<float> f = tensor_to_f32(*t);
    taps.insert(taps.end(), f.begin(), f.end());
  }
  d.taps = up.vec(taps);
  d.taps.ndim = 2, d.taps.shape = {int64_t(taps.size()) / cfg.kda.conv_kernel, cfg.kda.conv_kernel, 0, 0};
  d.taps.stride = {cfg.kda.conv_kernel, 1, 0, 0};
  d.a_log = up.vec(w.a_log, H);
  d.dt_bias = up.vec(w.dt_bias);
  d.o_norm = up.vec(w.o_norm);
  return d;
}

DeviceMla upload_mla(WeightUploader& up, const ModelConfig& cfg, const MlaWeights& w) {
  const MlaConfig& m = cfg.mla;
  const int64_t H = m.n_head, dn = m.qk_nope_head_dim, dv = m.v_head_dim, R = m.kv_lora_rank;
  DeviceMla d;
  if (w.q_proj) d.q = up.matrix(*w.q_proj);
  if (w.q_a_proj) {
    d.q_a = up.matrix(*w.q_a_proj), d.q_b = up.matrix(*w.q_b_proj);
    d.q_a_norm = up.vec(*w.q_a_layernorm);
  }
  const WeightView kv_a = up.matrix(w.kv_a_proj);
  d.kv_a_c = kv_a.slice_rows(0, R);
  d.kv_a_pe = kv_a.slice_rows(R, m.qk_rope_head_dim);
  d.kv_a_norm = up.vec(w.kv_a_layernorm);
  const WeightView kv_b = up.matrix(w.kv_b_proj);  // [H*(dn+dv), R]
  const std::vector<float> kvb = tensor_to_f32(w.kv_b_proj);
  std::vector<float> uk_t(size_t(H * R * dn));  // every head's W_UK,hᵀ, one after the other
  for (int64_t h = 0; h < H; ++h) {
    const float* uk = kvb.data() + h * (dn + dv) * R;  // [dn, R]
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < dn; ++j) uk_t[size_t((h * R + r) * dn + j)] = uk[j * R + r];
  }
  const WeightView uk_all = up.matrix(uk_t, H * R, dn);
  for (int64_t h = 0; h < H; ++h) {
    d.uk_t.push_back(uk_all.slice_rows(h * R, R));
    d.uv.push_back(kv_b.slice_rows(h * (dn + dv) + dn, dv));
  }
  d.kv_b = kv_b;
  if (w.g_proj) d.g = up.matrix(*w.g_proj);
  d.o = up.matrix(w.o_proj);
  return d;
}

DeviceMoe upload_moe(WeightUploader& up, const MoeWeights& w, const ExpertAct& act) {
  DeviceMoe d;
  d.router = up.matrix(w.gate);
  d.bias = tensor_to_f32(w.e_score_correction_bias);
  if (!d.bias.empty()) d.bias_device = up.vec(d.bias);
  if (w.latent_down) d.latent_down = up.matrix(*w.latent_down), d.latent_up = up.matrix(*w.latent_up);
  if (w.latent_norm) d.latent_norm = up.vec(*w.latent_norm);
  if (w.shared) d.shared = up.glu(*w.shared);
  up.part = "routed experts";
  for (const ExpertWeights& e : w.experts)
    d.experts.push_back({up.expert(e.w1), up.expert(e.w3), up.expert(e.w2)});
  up.part = "other";
  d.grouped =
      grouped_table(d.experts, act, [&](const std::vector<const void*>& p) { return up.pointers(p); });
  return d;
}

// The AttnRes pseudo-queries folded with their norm weights (q = res_norm.weight ⊙ res_proj.weight).
std::vector<float> folded(const std::optional<AttnResWeights>& r, const char* what, int layer) {
  DS_CHECK(r.has_value(), "attn_res_block_size is set but layer {} has no {} weights", layer, what);
  return fold_attn_res_query(tensor_to_f32(r->norm), tensor_to_f32(r->proj));
}

}  // namespace

DeviceWeights DeviceWeights::upload(const ModelConfig& cfg, const ModelWeights& w, Device device,
                                    Precision precision,
                                    const std::function<void(int64_t, int64_t)>& progress) {
  DeviceWeights dw;
  dw.device = device;
  dw.precision = precision;
  WeightUploader up(dw, checkpoint_bytes(w), progress);
  up.part = "embedding + lm_head";
  dw.embed = up.matrix(w.embed);
  dw.lm_head = up.matrix(w.lm_head);
  up.part = "other";
  dw.final_norm = up.vec(w.final_norm);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerWeights& lw = w.layers[size_t(l)];
    DeviceLayer d;
    d.kind = lw.kind;
    d.input_norm = up.vec(lw.input_layernorm);
    d.post_norm = up.vec(lw.post_attention_layernorm);
    up.part = "attention";
    if (lw.kda) d.kda = upload_kda(up, cfg, *lw.kda);
    if (lw.mla) d.mla = upload_mla(up, cfg, *lw.mla);
    up.part = "dense + shared MLPs";
    if (lw.mlp) d.mlp = up.glu(*lw.mlp);
    if (lw.moe) d.moe = upload_moe(up, *lw.moe, expert_act(cfg));
    up.part = "other";
    dw.layers.push_back(std::move(d));
  }
  if (cfg.attn_res_block_size > 0) {
    std::vector<float> attn, mlp;
    for (int l = 0; l < cfg.n_layer; ++l) {
      const std::vector<float> a = folded(w.layers[size_t(l)].attn_res, "self_attention_res", l);
      const std::vector<float> m = folded(w.layers[size_t(l)].mlp_res, "mlp_res", l);
      attn.insert(attn.end(), a.begin(), a.end());
      mlp.insert(mlp.end(), m.begin(), m.end());
    }
    dw.res_attn = up.vec(attn);
    dw.res_mlp = up.vec(mlp);
    dw.res_out = up.vec(folded(w.output_res, "output_attn_res", cfg.n_layer));
  }
  return dw;
}

int64_t DeviceWeights::bytes() const {
  int64_t n = 0;
  for (const auto& [part, b] : parts_) n += b;
  return n;
}

}  // namespace ds
