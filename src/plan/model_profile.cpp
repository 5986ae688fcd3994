#include "plan/model_profile.h"

#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "plan/hardware_profile.h"

namespace ds {

namespace {

using nlohmann::json;

// Adds products of shape factors to one kind; `replicated` marks tensors every TP rank holds in
// full. Overflow of int64 (absurd configs) is reported as an error, never wrapped.
struct Counter {
  std::array<WeightGroup, kWeightKinds>& w;
  const std::string& name;
  void add(WeightKind k, std::initializer_list<int64_t> factors, bool replicated = false) {
    int64_t n = 1;
    for (int64_t f : factors) {
      if (__builtin_mul_overflow(n, f, &n)) overflow();
    }
    WeightGroup& g = w[size_t(k)];
    if (__builtin_add_overflow(g.params, n, &g.params)) overflow();
    if (replicated && __builtin_add_overflow(g.replicated_params, n, &g.replicated_params)) overflow();
  }
  [[noreturn]] void overflow() const {
    fail("{}: parameter count overflows 64 bits (config too large)", name);
  }
};

void count_kda_layer(const ModelConfig& c, Counter& n) {
  const int64_t D = c.hidden, H = c.kda.n_head, K = c.kda.head_dim, W = c.kda.conv_kernel;
  n.add(WeightKind::Kda, {3, H, K, D});  // q/k/v_proj
  n.add(WeightKind::Kda, {3, H, K, W});  // q/k/v_conv1d [H*K, 1, W]
  n.add(WeightKind::Kda, {K, D}, true);  // f_a_proj (low-rank down, rank K)
  n.add(WeightKind::Kda, {H, K, K});     // f_b_proj
  n.add(WeightKind::Kda, {H});           // A_log [H]
  n.add(WeightKind::Kda, {H, K});        // dt_bias [H*K]
  n.add(WeightKind::Kda, {H, D});        // b_proj
  if (c.kda.full_rank_output_gate) {
    n.add(WeightKind::Kda, {H, K, D});  // g_proj
  } else {
    n.add(WeightKind::Kda, {K, D}, true);  // g_a_proj
    n.add(WeightKind::Kda, {H, K, K});     // g_b_proj
  }
  n.add(WeightKind::Kda, {K}, true);  // o_norm (shared by heads)
  n.add(WeightKind::Kda, {D, H, K});  // o_proj
}

void count_mla_layer(const ModelConfig& c, Counter& n) {
  const MlaConfig& m = c.mla;
  const int64_t D = c.hidden, NH = m.n_head, QK = m.qk_head_dim(), V = m.v_head_dim, QR = m.q_lora_rank;
  if (QR > 0) {
    n.add(WeightKind::Mla, {QR, D}, true);  // q_a_proj
    n.add(WeightKind::Mla, {QR}, true);     // q_a_layernorm
    n.add(WeightKind::Mla, {NH, QK, QR});   // q_b_proj
  } else {
    n.add(WeightKind::Mla, {NH, QK, D});  // q_proj
  }
  n.add(WeightKind::Mla, {m.latent_dim(), D}, true);                              // kv_a_proj_with_mqa
  n.add(WeightKind::Mla, {m.kv_lora_rank}, true);                                 // kv_a_layernorm
  n.add(WeightKind::Mla, {NH, int64_t(m.qk_nope_head_dim) + V, m.kv_lora_rank});  // kv_b_proj
  if (m.output_gate) n.add(WeightKind::Mla, {NH, V, D});                          // g_proj
  n.add(WeightKind::Mla, {D, NH, V});                                             // o_proj
}

void count_moe_layer(const ModelConfig& c, Counter& n) {
  const MoeConfig& m = c.moe;
  const int64_t D = c.hidden, E = m.n_expert, I = m.expert_intermediate;
  const int64_t Dl = m.latent_dim > 0 ? m.latent_dim : D;
  n.add(WeightKind::Router, {E, D}, true);  // gate.weight
  n.add(WeightKind::Router, {E}, true);     // e_score_correction_bias
  n.add(WeightKind::SharedExpert, {3, m.n_shared_expert, I, D});
  n.add(WeightKind::RoutedExpert, {E, 3, I, Dl});
  if (m.latent_dim > 0) {
    n.add(WeightKind::LatentProj, {2, Dl, D}, true);               // routed_expert_down/up_proj
    if (m.latent_norm) n.add(WeightKind::LatentProj, {Dl}, true);  // routed_expert_norm
  }
}

}  // namespace

const char* weight_kind_name(WeightKind k) {
  static constexpr const char* names[kWeightKinds] = {
      "embedding",      "lm_head",        "kda",    "mla",         "dense_mlp",
      "shared_experts", "routed_experts", "router", "latent_proj", "norms"};
  return names[size_t(k)];
}

double WeightGroup::bytes_per_gpu(int tp) const {
  DS_CHECK(tp >= 1, "tensor parallel size must be >= 1, got {}", tp);
  return (double(params - replicated_params) / tp + double(replicated_params)) * bits / 8;
}

int ModelProfile::n_moe_layers() const {
  int n = 0;
  for (int l = 0; l < config.n_layer; ++l) n += config.is_moe_layer(l);
  return n;
}

int64_t ModelProfile::total_params() const {
  int64_t n = 0;
  for (const WeightGroup& g : weights) n += g.params;
  return n;
}

double ModelProfile::weight_bytes() const {
  double b = 0;
  for (const WeightGroup& g : weights) b += g.bytes();
  return b;
}

double ModelProfile::weight_bytes_per_gpu(int tp) const {
  double b = 0;
  for (const WeightGroup& g : weights) b += g.bytes_per_gpu(tp);
  return b;
}

int64_t ModelProfile::expert_params() const {
  const MoeConfig& m = config.moe;
  if (m.n_expert == 0) return 0;
  const int64_t Dl = m.latent_dim > 0 ? m.latent_dim : config.hidden;
  return 3 * int64_t(m.expert_intermediate) * Dl;
}

double ModelProfile::expert_bytes() const {
  return double(expert_params()) * weight(WeightKind::RoutedExpert).bits / 8;
}

int64_t ModelProfile::active_params_per_token() const {
  const int64_t routed_active = int64_t(n_moe_layers()) * config.moe.n_expert_per_token * expert_params();
  return total_params() - weight(WeightKind::Embedding).params - weight(WeightKind::RoutedExpert).params +
         routed_active;
}

double ModelProfile::dense_bytes_per_gpu(int tp) const {
  return weight_bytes_per_gpu(tp) - weight(WeightKind::Embedding).bytes_per_gpu(tp) -
         weight(WeightKind::RoutedExpert).bytes_per_gpu(tp);
}

int64_t ModelProfile::kv_bytes_per_token(int kv_dtype_bytes) const {
  DS_CHECK(kv_dtype_bytes == 1 || kv_dtype_bytes == 2 || kv_dtype_bytes == 4,
           "KV dtype must be 1 (fp8), 2 (bf16) or 4 (f32, the CPU engine) bytes, got {}", kv_dtype_bytes);
  return int64_t(config.mla.latent_dim()) * kv_dtype_bytes * config.n_mla_layers();
}

int64_t ModelProfile::kda_recurrent_bytes() const {
  const int64_t K = config.kda.head_dim;
  return int64_t(config.n_kda_layers()) * config.kda.n_head * K * K * 4;
}

int64_t ModelProfile::kda_conv_bytes() const {
  const int64_t P = int64_t(config.kda.n_head) * config.kda.head_dim;
  return int64_t(config.n_kda_layers()) * 3 * P * (config.kda.conv_kernel - 1) * 2;
}

double ModelProfile::lm_head_flops() const {
  return 2.0 * config.vocab_size * config.hidden;
}

double ModelProfile::linear_flops_per_token() const {
  return 2.0 * double(active_params_per_token() - weight(WeightKind::LmHead).params);
}

double ModelProfile::routed_linear_flops_per_token() const {
  return 2.0 * n_moe_layers() * config.moe.n_expert_per_token * double(expert_params());
}

double ModelProfile::mla_flops_per_key(bool decode) const {
  const MlaConfig& m = config.mla;
  const double per_head =
      decode ? 2.0 * (m.latent_dim() + m.kv_lora_rank) : 2.0 * (m.qk_head_dim() + m.v_head_dim);
  return double(config.n_mla_layers()) * m.n_head * per_head;
}

double ModelProfile::mla_expand_flops_per_context_token() const {
  const MlaConfig& m = config.mla;
  return double(config.n_mla_layers()) * 2.0 * m.kv_lora_rank * m.n_head *
         (m.qk_nope_head_dim + m.v_head_dim);
}

double ModelProfile::mla_attention_flops(int64_t n_new, int64_t n_context) const {
  if (n_new <= 0) return 0;
  const double n = double(n_new), c = double(n_context);
  const double keys = n * c + n * (n + 1) / 2;  // causal: token i of the chunk sees c + i keys
  if (n_new == 1) return mla_flops_per_key(true) * keys;
  return mla_flops_per_key(false) * keys + mla_expand_flops_per_context_token() * c;
}

double ModelProfile::kda_chunk_flops(int64_t C, int64_t D) {
  const double c = double(C), d = double(D);
  return 12 * c * c * c + 8 * c * c * d + 6 * c * d * d;
}

double ModelProfile::kda_flops_per_token(bool decode, int chunk_tokens) const {
  DS_CHECK(chunk_tokens > 0, "KDA chunk size must be positive, got {}", chunk_tokens);
  const double per_head_layer = double(config.n_kda_layers()) * config.kda.n_head;
  const int64_t K = config.kda.head_dim;
  if (decode) return per_head_layer * 7.0 * double(K * K);
  return per_head_layer * kda_chunk_flops(chunk_tokens, K) / chunk_tokens;
}

double ModelProfile::kda_flops(int64_t n_new, int chunk_tokens) const {
  if (n_new <= 0) return 0;
  return kda_flops_per_token(n_new == 1, chunk_tokens) * double(n_new);
}

ModelProfile ModelProfile::from_config(const ModelConfig& c, std::string name) {
  const double routed_expert_bits = c.quant.routed_expert_bits();
  DS_CHECK(routed_expert_bits > 0 && routed_expert_bits <= 32,
           "routed expert bits must be in (0, 32], got {}", routed_expert_bits);
  ModelProfile p;
  p.name = std::move(name);
  p.config = c;
  DS_CHECK(int(c.layer_kind.size()) == c.n_layer, "{}: {} layer kinds for {} layers", p.name,
           c.layer_kind.size(), c.n_layer);
  Counter n{p.weights, p.name};
  const int64_t D = c.hidden, V = c.vocab_size;
  n.add(WeightKind::Embedding, {V, D});
  if (!c.tie_word_embeddings) n.add(WeightKind::LmHead, {V, D});
  const bool attn_res = c.attn_res_block_size > 0;  // + AttnRes norm and query per sublayer
  n.add(WeightKind::Norm, {c.n_layer, attn_res ? 6 : 2, D}, true);
  n.add(WeightKind::Norm, {attn_res ? 3 : 1, D}, true);  // final norm (+ output AttnRes norm, query)
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.layer_kind[size_t(l)] == LayerKind::Kda)
      count_kda_layer(c, n);
    else
      count_mla_layer(c, n);
    if (c.is_moe_layer(l))
      count_moe_layer(c, n);
    else
      n.add(WeightKind::DenseMlp, {3, c.dense_intermediate, D});
  }
  // Bounding the total bounds every derived count (active params, state and KV bytes) too.
  int64_t total = 0;
  for (const WeightGroup& g : p.weights) {
    if (__builtin_add_overflow(total, g.params, &total) || total > (int64_t(1) << 53)) n.overflow();
  }
  p.weights[size_t(WeightKind::RoutedExpert)].bits = routed_expert_bits;
  p.routed_expert_format = routed_expert_bits < 16 ? "mxfp4" : "bf16";
  return p;
}

ModelProfile ModelProfile::load(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::string path = resolve_profile("models", name_or_path);
  std::error_code ec;
  if (fs::is_directory(path, ec)) path = (fs::path(path) / "config.json").string();
  const json j = read_json_file(path);
  const ModelConfig config = ModelConfig::from_json(j, path);
  const bool bundled = !fs::exists(name_or_path, ec);
  ModelProfile p = from_config(config, bundled ? name_or_path : path);
  p.source = path;
  return p;
}

}  // namespace ds
