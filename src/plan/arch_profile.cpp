#include "plan/arch_profile.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "plan/hardware_profile.h"

namespace ds {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(AttentionFamily family) {
  switch (family) {
    case AttentionFamily::Gqa:
      return "gqa";
    case AttentionFamily::Mla:
      return "mla";
    case AttentionFamily::MlaSparse:
      return "mla+dsa";
    case AttentionFamily::HybridKdaMla:
      return "kda+mla";
  }
  return "?";
}

namespace {

constexpr const char* kKimiProfiles[] = {"kimi-k3", "kimi-linear-48b"};
constexpr const char* kFamilies[] = {"llama-3.1-70b", "qwen3-235b-a22b",   "deepseek-v3",
                                     "kimi-k2",       "deepseek-v3.2-exp", "glm-5.2"};

int64_t get_int(const json& c, const char* key, int64_t fallback, const std::string& src) {
  if (!c.contains(key)) return fallback;
  if (!c.at(key).is_number_integer())
    fail("{}: `config.{}` must be an integer, got {}", src, key, c.at(key).dump());
  const int64_t v = c.at(key).get<int64_t>();
  if (v < 0) fail("{}: `config.{}` must be >= 0, got {}", src, key, v);
  return v;
}

ArchProfile from_family_json(const json& j, const std::string& src) {
  if (!j.is_object() || !j.contains("config") || !j.at("config").is_object())
    fail("{}: a family profile is an object with `name`, `family`, `source` and `config`", src);
  ArchProfile a;
  a.name = j.value("name", src);
  a.source = j.value("source", "");
  if (a.source.empty()) fail("{}: `source` is missing (where the config comes from)", src);
  const std::string fam = j.value("family", "");
  if (fam == "gqa")
    a.family = AttentionFamily::Gqa;
  else if (fam == "mla")
    a.family = AttentionFamily::Mla;
  else if (fam == "mla+dsa")
    a.family = AttentionFamily::MlaSparse;
  else
    fail("{}: `family` must be gqa, mla or mla+dsa, got \"{}\"", src, fam);
  const json& c = j.at("config");
  a.hidden = get_int(c, "hidden_size", 0, src);
  a.layers = get_int(c, "num_hidden_layers", 0, src);
  a.vocab = get_int(c, "vocab_size", 0, src);
  a.heads = get_int(c, "num_attention_heads", 0, src);
  a.kv_heads = get_int(c, "num_key_value_heads", a.heads, src);
  a.head_dim = get_int(c, "head_dim", a.heads > 0 ? a.hidden / a.heads : 0, src);
  a.q_lora = get_int(c, "q_lora_rank", 0, src);
  a.kv_lora = get_int(c, "kv_lora_rank", 0, src);
  a.qk_nope = get_int(c, "qk_nope_head_dim", 0, src);
  a.qk_rope = get_int(c, "qk_rope_head_dim", 0, src);
  a.v_head = get_int(c, "v_head_dim", 0, src);
  a.index_heads = get_int(c, "index_n_heads", 0, src);
  a.index_head_dim = get_int(c, "index_head_dim", 0, src);
  a.index_topk = get_int(c, "index_topk", 0, src);
  a.intermediate = get_int(c, "intermediate_size", 0, src);
  a.moe_intermediate = get_int(c, "moe_intermediate_size", 0, src);
  a.experts = get_int(c, "n_routed_experts", get_int(c, "num_experts", 0, src), src);
  a.top_k = get_int(c, "num_experts_per_tok", 0, src);
  a.shared_experts = get_int(c, "n_shared_experts", 0, src);
  a.dense_layers = a.experts > 0 ? get_int(c, "first_k_dense_replace", 0, src) : a.layers;
  // GLM-5.2 (index_topk_freq 4, index_skip_topk_offset 3): the first `offset` layers and then one in
  // `freq` compute their own indexer keys; the others reuse the previous top-k.
  const int64_t freq = std::max<int64_t>(1, get_int(c, "index_topk_freq", 1, src));
  const int64_t offset = std::min(a.layers, get_int(c, "index_skip_topk_offset", 0, src));
  a.indexer_layers = a.index_topk > 0 ? (freq == 1 ? a.layers : offset + (a.layers - offset) / freq) : 0;
  const bool mla = a.family != AttentionFamily::Gqa;
  if (a.hidden <= 0 || a.layers <= 0 || a.heads <= 0 || (mla && (a.kv_lora <= 0 || a.v_head <= 0)) ||
      (!mla && (a.kv_heads <= 0 || a.head_dim <= 0)) ||
      (a.family == AttentionFamily::MlaSparse && (a.index_topk <= 0 || a.index_heads <= 0)) ||
      (a.experts > 0 && (a.top_k <= 0 || a.moe_intermediate <= 0)) ||
      (a.dense_layers > 0 && a.intermediate <= 0))
    fail(
        "{}: incomplete {} config (hidden, layers, heads and the family's attention and FFN shapes are "
        "needed)",
        src, fam);
  return a;
}

}  // namespace

std::vector<std::string> ArchProfile::bundled_names() {
  std::vector<std::string> out(std::begin(kKimiProfiles), std::end(kKimiProfiles));
  out.insert(out.end(), std::begin(kFamilies), std::end(kFamilies));
  return out;
}

ArchProfile ArchProfile::load(const std::string& name_or_path) {
  bool family = std::find(std::begin(kFamilies), std::end(kFamilies), name_or_path) != std::end(kFamilies);
  if (!family && fs::is_regular_file(name_or_path) && fs::path(name_or_path).filename() != "config.json") {
    const json j = read_json_file(name_or_path);
    family = j.is_object() && j.contains("family");
  }
  if (family) {
    const std::string path = resolve_profile("families", name_or_path);
    return from_family_json(read_json_file(path), path);
  }
  // A Kimi Linear / K3 profile: bundled name, config.json or checkpoint folder.
  ArchProfile a;
  a.kimi = ModelProfile::load(name_or_path);
  const ModelConfig& c = a.kimi->config;
  a.name = a.kimi->name;
  a.source = a.kimi->source;
  a.family = AttentionFamily::HybridKdaMla;
  a.hidden = c.hidden;
  a.layers = c.n_layer;
  a.vocab = c.vocab_size;
  a.moe_intermediate = c.moe.expert_intermediate;
  a.top_k = c.moe.n_expert_per_token;
  return a;
}

double ArchProfile::kv_bytes_per_token(int kv_dtype_bytes) const {
  if (kimi) return double(kimi->kv_bytes_per_token(kv_dtype_bytes));
  if (family == AttentionFamily::Gqa) return 2.0 * double(kv_heads * head_dim * layers) * kv_dtype_bytes;
  double b = double((kv_lora + qk_rope) * layers) * kv_dtype_bytes;
  if (family == AttentionFamily::MlaSparse)  // fp8 index key + one f32 scale per 128 values
    b += double(indexer_layers) * (double(index_head_dim) + 4.0 * double((index_head_dim + 127) / 128));
  return b;
}

int64_t ArchProfile::state_bytes() const {
  return kimi ? kimi->kda_state_bytes() : 0;
}

double ArchProfile::linear_flops_per_token() const {
  if (kimi) return kimi->linear_flops_per_token();
  const double h = double(hidden);
  double attn = 0;
  if (family == AttentionFamily::Gqa) {
    attn = h * double(heads * head_dim) * 2 + 2 * h * double(kv_heads * head_dim);  // q, o; k, v
  } else {
    const double qk = double(qk_nope + qk_rope);
    attn = q_lora > 0 ? h * double(q_lora) + double(q_lora * heads) * qk : h * double(heads) * qk;
    attn += h * double(kv_lora + qk_rope) + double(kv_lora * heads * (qk_nope + v_head));  // kv_a, kv_b
    attn += double(heads * v_head) * h;                                                    // o
    if (family == AttentionFamily::MlaSparse) {  // indexer: q from the q latent, one key, head weights
      const double iq = q_lora > 0 ? double(q_lora) : h;
      attn +=
          double(indexer_layers) / double(layers) *
          (iq * double(index_heads * index_head_dim) + h * double(index_head_dim) + h * double(index_heads));
    }
  }
  const double dense_ffn = 3 * h * double(intermediate);
  const double moe_ffn =
      3 * h * double(moe_intermediate) * double(top_k + shared_experts) + h * double(experts);  // + router
  const double per_layer_params = attn;
  const double ffn = double(dense_layers) * dense_ffn + double(layers - dense_layers) * moe_ffn;
  return 2 * (per_layer_params * double(layers) + ffn);
}

double ArchProfile::attention_flops(int64_t n) const {
  if (kimi) return kimi->mla_attention_flops(n, 0) + kimi->kda_flops(n, 64);
  const double pairs = double(n) * double(n + 1) / 2;
  if (family == AttentionFamily::Gqa) return pairs * 4.0 * double(heads * head_dim) * double(layers);
  if (family == AttentionFamily::Mla)  // non-absorbed prefill: q.k over nope + rope, p.v over v
    return pairs * 2.0 * double(heads) * double(qk_nope + qk_rope + v_head) * double(layers);
  // DSA: the sparse kernel runs in the absorbed (MQA over the latent) form on min(i, topk) keys per
  // query; the indexer scores every causal pair with index_heads x index_head_dim products.
  const double k = double(index_topk), N = double(n);
  const double sparse_pairs = N <= k ? pairs : k * (k + 1) / 2 + (N - k) * k;
  const double attend = sparse_pairs * 2.0 * double(heads) * double(2 * kv_lora + qk_rope) * double(layers);
  const double index = pairs * 2.0 * double(index_heads * index_head_dim) * double(indexer_layers);
  return attend + index;
}

}  // namespace ds
