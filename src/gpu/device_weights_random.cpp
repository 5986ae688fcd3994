// DeviceWeights::random: the DeviceWeights structure of a config, filled on the device with
// fill_uniform (no checkpoint, no host copy of the weights).
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "gpu/device_weights.h"
#include "kernels/elementwise.h"
#include "kernels/linear.h"
#include "kernels/memory.h"

namespace ds {

class RandomWeights {
 public:
  RandomWeights(DeviceWeights& dw, uint64_t seed) : dw_(dw), seed_(seed) {}

  std::string part = "other";

  // GEMM weight [rows, cols], U(-a, a) with a = sqrt(3 / cols).
  WeightView matrix(int64_t rows, int64_t cols) {
    const DType dt = dw_.precision == Precision::BF16 ? DType::BF16 : DType::F32;
    void* p = alloc(rows * cols * int64_t(dtype_size(dt)));
    fill_uniform(TensorView::contiguous(p, dt, {rows * cols}, dw_.device), next(),
                 std::sqrt(3.0f / float(cols)));
    return WeightView{p, dt, rows, cols, dw_.device};
  }
  // f32 [n] = offset + scale · U(-1, 1).
  TensorView vec(int64_t n, float scale, float offset = 0.0f) {
    void* p = alloc(n * 4);
    const TensorView v = TensorView::contiguous(p, DType::F32, {n}, dw_.device);
    fill_uniform(v, next(), scale, offset);
    return v;
  }
  DeviceGlu glu(int64_t D, int64_t I) { return {matrix(I, D), matrix(I, D), matrix(D, I)}; }
  // MXFP4 weight [rows, cols]: the codes are the bytes of uniform f32 values, every scale one power of
  // two chosen so that the rms weight (about 2.9 · scale over random codes) is near 1 / sqrt(cols), the
  // dense weights' rms.
  Mxfp4View mxfp4(int64_t rows, int64_t cols) {
    DS_CHECK(cols % 32 == 0, "random MXFP4 weight: {} inputs, a multiple of 32 needed", cols);
    const int64_t n_codes = rows * cols / 2, n_scales = rows * cols / 32;
    const int64_t code_words = (n_codes + 3) / 4, scale_words = (n_scales + 3) / 4;
    void* codes = alloc(code_words * 4);
    void* scales = alloc(scale_words * 4);
    fill_uniform(TensorView::contiguous(codes, DType::F32, {code_words}, dw_.device), next(), 1.0f);
    const int e = int(std::lround(std::log2(1.0 / (2.9 * std::sqrt(double(cols))))));
    const uint32_t b = uint32_t(127 + e), word = b * 0x01010101u;  // four scale bytes as one f32 value
    float f;
    std::memcpy(&f, &word, 4);
    fill_uniform(TensorView::contiguous(scales, DType::F32, {scale_words}, dw_.device), 0, 0.0f, f);
    return Mxfp4View{static_cast<const uint8_t*>(codes), static_cast<const uint8_t*>(scales), rows, cols,
                     dw_.device};
  }
  DeviceGlu glu_mxfp4(int64_t D, int64_t I) { return {mxfp4(I, D), mxfp4(I, D), mxfp4(D, I)}; }
  const void* const* pointers(const std::vector<const void*>& p) {
    void* d = alloc(int64_t(p.size() * sizeof(void*)));
    copy_bytes(d, dw_.device, p.data(), Device::Cpu, int64_t(p.size() * sizeof(void*)));
    return static_cast<const void* const*>(d);
  }

 private:
  void* alloc(int64_t bytes) {
    dw_.storage_.emplace_back(dw_.device, bytes);
    dw_.parts_[part] += bytes;
    return dw_.storage_.back().data();
  }
  uint64_t next() { return seed_ + 0x632be59bd9b4e019ull * ++n_; }

  DeviceWeights& dw_;
  uint64_t seed_, n_ = 0;
};

namespace {

DeviceKda random_kda(RandomWeights& r, const ModelConfig& cfg) {
  const int64_t D = cfg.hidden, H = cfg.kda.n_head, K = cfg.kda.head_dim, P = H * K, W = cfg.kda.conv_kernel;
  DeviceKda d;
  d.q = r.matrix(P, D), d.k = r.matrix(P, D), d.v = r.matrix(P, D);
  d.f_a = r.matrix(K, D), d.f_b = r.matrix(P, K), d.b = r.matrix(H, D);
  if (cfg.kda.full_rank_output_gate)
    d.g = r.matrix(P, D);
  else
    d.g_a = r.matrix(K, D), d.g_b = r.matrix(P, K);
  d.o = r.matrix(D, P);
  d.taps = r.vec(3 * P * W, 0.5f);
  d.taps.ndim = 2, d.taps.shape = {3 * P, W, 0, 0}, d.taps.stride = {W, 1, 0, 0};
  d.a_log = r.vec(H, 0.5f);
  d.dt_bias = r.vec(P, 0.5f);
  d.o_norm = r.vec(K, 0.0f, 1.0f);
  return d;
}

// kv_b's W_UK,h rows [dn, R] <- (W_UK,hᵀ)ᵀ of uk_t, so that the expanded MLA prefill (kv_b whole) and the
// absorbed form (uk_t) compute the same function: per head y = I · uk_t,hᵀ through linear.
void transpose_into_kv_b(const DeviceMla& d, int64_t dn, int64_t dv, int64_t R) {
  const Device dev = d.kv_b.device;
  const DType dt = d.kv_b.dtype;
  const int64_t es = int64_t(dtype_size(dt));
  std::vector<uint8_t> eye(size_t(dn * dn * es), 0);
  for (int64_t i = 0; i < dn; ++i) {
    if (dt == DType::BF16) {
      const uint16_t one = f32_to_bf16(1.0f);
      std::memcpy(eye.data() + (i * dn + i) * es, &one, 2);
    } else {
      const float one = 1.0f;
      std::memcpy(eye.data() + (i * dn + i) * es, &one, 4);
    }
  }
  const Buffer x = Buffer::from_host<uint8_t>(dev, eye);
  auto* kv_b = static_cast<uint8_t*>(const_cast<void*>(d.kv_b.data));  // owned by the weights
  for (size_t h = 0; h < d.uk_t.size(); ++h)
    linear(TensorView::matrix(x.data(), dt, dn, dn, dn, dev), d.uk_t[h],
           TensorView::matrix(kv_b + int64_t(h) * (dn + dv) * R * es, dt, dn, R, R, dev));
  synchronize(dev);
}

DeviceMla random_mla(RandomWeights& r, const ModelConfig& cfg) {
  const MlaConfig& m = cfg.mla;
  const int64_t D = cfg.hidden, H = m.n_head, dq = m.qk_head_dim(), dn = m.qk_nope_head_dim,
                dv = m.v_head_dim;
  const int64_t R = m.kv_lora_rank;
  DeviceMla d;
  if (m.q_lora_rank > 0) {
    d.q_a = r.matrix(m.q_lora_rank, D), d.q_b = r.matrix(H * dq, m.q_lora_rank);
    d.q_a_norm = r.vec(m.q_lora_rank, 0.0f, 1.0f);
  } else {
    d.q = r.matrix(H * dq, D);
  }
  const WeightView kv_a = r.matrix(R + m.qk_rope_head_dim, D);
  d.kv_a_c = kv_a.slice_rows(0, R), d.kv_a_pe = kv_a.slice_rows(R, m.qk_rope_head_dim);
  d.kv_a_norm = r.vec(R, 0.0f, 1.0f);
  const WeightView uk_all = r.matrix(H * R, dn), kv_b = r.matrix(H * (dn + dv), R);
  for (int64_t h = 0; h < H; ++h) {
    d.uk_t.push_back(uk_all.slice_rows(h * R, R));
    d.uv.push_back(kv_b.slice_rows(h * (dn + dv) + dn, dv));
  }
  d.kv_b = kv_b;
  if (kv_b.device == Device::Cuda) transpose_into_kv_b(d, dn, dv, R);
  if (m.output_gate) d.g = r.matrix(H * dv, D);
  d.o = r.matrix(D, H * dv);
  return d;
}

DeviceMoe random_moe(RandomWeights& r, const ModelConfig& cfg) {
  const MoeConfig& mc = cfg.moe;
  const int64_t D = cfg.hidden, L = mc.latent_dim > 0 ? mc.latent_dim : D, I = mc.expert_intermediate;
  DeviceMoe d;
  d.router = r.matrix(mc.n_expert, D);
  d.bias.assign(size_t(mc.n_expert), 0.0f);
  d.bias_device = r.vec(mc.n_expert, 0.0f);
  if (mc.latent_dim > 0) d.latent_down = r.matrix(L, D), d.latent_up = r.matrix(D, L);
  if (mc.latent_norm) d.latent_norm = r.vec(L, 0.0f, 1.0f);
  if (mc.n_shared_expert > 0) d.shared = r.glu(D, I * mc.n_shared_expert);
  r.part = "routed experts";
  for (int e = 0; e < mc.n_expert; ++e)
    d.experts.push_back(cfg.quant.mxfp4_experts ? r.glu_mxfp4(L, I) : r.glu(L, I));
  r.part = "other";
  d.grouped = grouped_table(d.experts, expert_act(cfg),
                            [&](const std::vector<const void*>& p) { return r.pointers(p); });
  return d;
}

}  // namespace

DeviceWeights DeviceWeights::random(const ModelConfig& cfg, Device device, Precision precision,
                                    uint64_t seed) {
  DeviceWeights dw;
  dw.device = device;
  dw.precision = precision;
  RandomWeights r(dw, seed);
  const int64_t D = cfg.hidden;
  r.part = "embedding + lm_head";
  dw.embed = r.matrix(cfg.vocab_size, D);
  dw.lm_head = r.matrix(cfg.vocab_size, D);
  r.part = "other";
  dw.final_norm = r.vec(D, 0.0f, 1.0f);
  for (int l = 0; l < cfg.n_layer; ++l) {
    DeviceLayer d;
    d.kind = cfg.layer_kind[size_t(l)];
    d.input_norm = r.vec(D, 0.0f, 1.0f);
    d.post_norm = r.vec(D, 0.0f, 1.0f);
    r.part = "attention";
    if (d.kind == LayerKind::Kda) d.kda = random_kda(r, cfg);
    if (d.kind == LayerKind::Mla) d.mla = random_mla(r, cfg);
    r.part = "dense + shared MLPs";
    if (cfg.is_moe_layer(l))
      d.moe = random_moe(r, cfg);
    else
      d.mlp = r.glu(D, cfg.dense_intermediate);
    r.part = "other";
    dw.layers.push_back(std::move(d));
  }
  if (cfg.attn_res_block_size > 0) {
    dw.res_attn = r.vec(int64_t(cfg.n_layer) * D, 0.1f);
    dw.res_mlp = r.vec(int64_t(cfg.n_layer) * D, 0.1f);
    dw.res_out = r.vec(D, 0.1f);
  }
  return dw;
}

}  // namespace ds
