#include "model/model_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "core/file_io.h"

namespace ds {

namespace {

using nlohmann::json;

// Reads typed keys from one JSON object; every error names the source file and the dotted key.
class KeyReader {
 public:
  KeyReader(const json& obj, std::string source, std::string path)
      : obj_(obj), source_(std::move(source)), path_(std::move(path)) {}

  bool has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  const json& at(const char* key) const { return obj_.at(key); }
  const std::string& source() const { return source_; }

  int64_t int64(const char* key, std::optional<int64_t> dflt) const {
    if (!has(key)) {
      if (!dflt) fail("{}: missing key `{}`", source_, name(key));
      return *dflt;
    }
    const json& v = obj_.at(key);
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail("{}: key `{}` is out of range: {}", source_, name(key), v.dump());
      return v.get<int64_t>();
    }
    // Integral floats such as 4.0 are accepted; anything else is a type error.
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (d == double(int64_t(d)) && d > -9.0e18 && d < 9.0e18) return int64_t(d);
    }
    fail("{}: key `{}` must be an integer, got {}", source_, name(key), v.dump());
  }

  int int32(const char* key, std::optional<int> dflt) const {
    const int64_t v = int64(key, dflt ? std::optional<int64_t>(*dflt) : std::nullopt);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      fail("{}: key `{}` is out of range: {}", source_, name(key), v);
    return int(v);
  }

  float f32(const char* key, std::optional<float> dflt) const {
    if (!has(key)) {
      if (!dflt) fail("{}: missing key `{}`", source_, name(key));
      return *dflt;
    }
    const json& v = obj_.at(key);
    if (!v.is_number()) fail("{}: key `{}` must be a number, got {}", source_, name(key), v.dump());
    return float(v.get<double>());
  }

  bool boolean(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    const json& v = obj_.at(key);
    if (!v.is_boolean()) fail("{}: key `{}` must be true or false, got {}", source_, name(key), v.dump());
    return v.get<bool>();
  }

  std::string str(const char* key, std::optional<std::string> dflt) const {
    if (!has(key)) {
      if (!dflt) fail("{}: missing key `{}`", source_, name(key));
      return *dflt;
    }
    const json& v = obj_.at(key);
    if (!v.is_string()) fail("{}: key `{}` must be a string, got {}", source_, name(key), v.dump());
    return v.get<std::string>();
  }

  std::vector<int> int_list(const char* key) const {
    if (!has(key)) return {};
    const json& v = obj_.at(key);
    if (!v.is_array()) fail("{}: key `{}` must be a list of integers, got {}", source_, name(key), v.dump());
    std::vector<int> out;
    for (const json& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < std::numeric_limits<int>::min() ||
          e.get<int64_t>() > std::numeric_limits<int>::max())
        fail("{}: key `{}` must hold integers, got element {}", source_, name(key), e.dump());
      out.push_back(e.get<int>());
    }
    return out;
  }

  // Token ids may be an integer, a list (first entry used) or null (-1).
  int token_id(const char* key) const {
    if (!has(key)) return -1;
    const json& v = obj_.at(key);
    if (v.is_array()) {
      if (v.empty()) return -1;
      if (!v[0].is_number_integer())
        fail("{}: key `{}` must hold integers, got {}", source_, name(key), v.dump());
      return int(std::clamp<int64_t>(v[0].get<int64_t>(), -1, std::numeric_limits<int>::max()));
    }
    return int32(key, -1);
  }

 private:
  const json& obj_;
  std::string source_;
  std::string path_;
};

// Turns the 1-based kda_layers / full_attn_layers lists into one LayerKind per layer.
std::vector<LayerKind> layer_kinds(const KeyReader& lin, int n_layer) {
  const std::vector<int> kda = lin.int_list("kda_layers");
  const std::vector<int> mla = lin.int_list("full_attn_layers");
  if (n_layer <= 0 || n_layer > 100000) return {};  // validate() reports num_hidden_layers
  std::vector<int> seen(size_t(n_layer), 0);        // 0 none, 1 kda, 2 mla
  auto mark = [&](const std::vector<int>& list, const char* key, int tag) {
    for (int l : list) {
      if (l < 1 || l > n_layer)
        fail("{}: `{}` holds layer {}, outside 1..{} (the lists are 1-based)", lin.source(), lin.name(key), l,
             n_layer);
      int& s = seen[size_t(l - 1)];
      if (s == tag) fail("{}: `{}` lists layer {} twice", lin.source(), lin.name(key), l);
      if (s != 0)
        fail("{}: layer {} (1-based) is in both `{}` and `{}`", lin.source(), l, lin.name("kda_layers"),
             lin.name("full_attn_layers"));
      s = tag;
    }
  };
  mark(kda, "kda_layers", 1);
  mark(mla, "full_attn_layers", 2);
  std::vector<LayerKind> kinds;
  for (int i = 0; i < n_layer; ++i) {
    if (seen[size_t(i)] == 0)
      fail("{}: layer {} (1-based) is in neither `{}` nor `{}`", lin.source(), i + 1, lin.name("kda_layers"),
           lin.name("full_attn_layers"));
    kinds.push_back(seen[size_t(i)] == 1 ? LayerKind::Kda : LayerKind::Mla);
  }
  return kinds;
}

void parse_text(const json& t, const std::string& src, ModelConfig& c) {
  const KeyReader r(t, src, "");
  c.model_type = r.str("model_type", std::string("kimi_linear"));
  if (c.model_type != "kimi_linear")
    fail("{}: `model_type` is \"{}\", expected \"kimi_linear\" (or a \"kimi_k3\" wrapper)", src,
         c.model_type);
  c.vocab_size = r.int32("vocab_size", std::nullopt);
  c.hidden = r.int32("hidden_size", std::nullopt);
  c.n_layer = r.int32("num_hidden_layers", std::nullopt);
  c.dense_intermediate = r.int32("intermediate_size", 0);
  c.rms_norm_eps = r.f32("rms_norm_eps", 1e-5f);
  const std::string act = r.str("hidden_act", std::string("silu"));
  if (act == "silu") {
    c.act = Activation::Silu;
  } else if (act == "situ") {
    c.act = Activation::Situ;
  } else {
    fail("{}: `hidden_act` is \"{}\", expected \"silu\" or \"situ\"", src, act);
  }
  c.situ_beta = r.f32("activation_situ_beta", 4.0f);
  c.situ_linear_beta = r.f32("activation_situ_linear_beta", 25.0f);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.attn_res_block_size = r.int32("attn_res_block_size", 0);
  c.pad_token_id = r.token_id("pad_token_id");
  c.bos_token_id = r.token_id("bos_token_id");
  c.eos_token_id = r.token_id("eos_token_id");
  c.max_position_tokens = r.int64("max_position_embeddings", r.int64("model_max_length", 0));

  // MLA. NoPE is the only supported position scheme (no rotary tables anywhere).
  c.mla.n_head = r.int32("num_attention_heads", std::nullopt);
  c.mla.q_lora_rank = r.int32("q_lora_rank", 0);
  c.mla.kv_lora_rank = r.int32("kv_lora_rank", std::nullopt);
  c.mla.qk_nope_head_dim = r.int32("qk_nope_head_dim", std::nullopt);
  c.mla.qk_rope_head_dim = r.int32("qk_rope_head_dim", std::nullopt);
  c.mla.v_head_dim = r.int32("v_head_dim", std::nullopt);
  c.mla.output_gate = r.boolean("mla_use_output_gate", false);
  if (!r.boolean("mla_use_nope", true))
    fail("{}: `mla_use_nope` is false; only NoPE MLA (Kimi Linear / K3) is supported", src);

  // MoE.
  c.moe.n_expert = r.int32("num_experts", 0);
  c.moe.n_expert_per_token = r.int32("num_experts_per_token", 0);
  c.moe.n_shared_expert = r.int32("num_shared_experts", 0);
  c.moe.expert_intermediate = r.int32("moe_intermediate_size", 0);
  c.moe.first_k_dense = r.int32("first_k_dense_replace", 0);
  c.moe.layer_freq = r.int32("moe_layer_freq", 1);
  c.moe.renormalize = r.boolean("moe_renormalize", true);
  c.moe.routed_scaling = r.f32("routed_scaling_factor", 1.0f);
  c.moe.latent_dim = r.int32("routed_expert_hidden_size", 0);
  c.moe.latent_norm = r.boolean("latent_moe_use_norm", false);
  const std::string router = r.str("moe_router_activation_func", std::string("sigmoid"));
  if (router != "sigmoid")
    fail("{}: `moe_router_activation_func` is \"{}\", only \"sigmoid\" is supported", src, router);
  for (const char* key : {"num_expert_group", "topk_group"}) {
    const int g = r.int32(key, 1);
    if (g != 1) fail("{}: `{}` is {}, only 1 (ungrouped top-k) is supported", src, key, g);
  }
  const int n_mtp = r.int32("num_nextn_predict_layers", 0);
  if (n_mtp < 0) fail("{}: `num_nextn_predict_layers` is {}, must be >= 0", src, n_mtp);

  // KDA.
  if (!r.has("linear_attn_config") || !t.at("linear_attn_config").is_object())
    fail("{}: missing object `linear_attn_config`", src);
  const KeyReader lin(t.at("linear_attn_config"), src, "linear_attn_config");
  c.kda.n_head = lin.int32("num_heads", std::nullopt);
  c.kda.head_dim = lin.int32("head_dim", std::nullopt);
  c.kda.conv_kernel = lin.int32("short_conv_kernel_size", 4);
  if (lin.has("gate_lower_bound")) c.kda.gate_lower_bound = lin.f32("gate_lower_bound", std::nullopt);
  c.kda.full_rank_output_gate = lin.boolean("use_full_rank_gate", false);
  c.layer_kind = layer_kinds(lin, c.n_layer);
}

// quantization_config of the whole model (top level) or of the text model (text_config); absent or
// null: unquantised. Only compressed-tensors MXFP4 (K3's routed experts) is supported.
QuantConfig parse_quantization(const json& top, const std::string& src) {
  const json* q = nullptr;
  if (top.contains("quantization_config"))
    q = &top.at("quantization_config");
  else if (top.contains("text_config") && top.at("text_config").is_object() &&
           top.at("text_config").contains("quantization_config"))
    q = &top.at("text_config").at("quantization_config");
  QuantConfig out;
  if (q == nullptr || q->is_null()) return out;
  if (!q->is_object()) fail("{}: `quantization_config` must be an object, got {}", src, q->dump());
  auto text = [&](const char* key) {
    if (!q->contains(key)) return std::string();
    if (!q->at(key).is_string())
      fail("{}: `quantization_config.{}` must be a string, got {}", src, key, q->at(key).dump());
    return q->at(key).get<std::string>();
  };
  const std::string method = text("quant_method");
  const std::string format = text("format");
  if (method != "compressed-tensors" || format.find("mxfp4") == std::string::npos)
    fail(
        "{}: unsupported quantization_config (quant_method \"{}\", format \"{}\"); supported: "
        "compressed-tensors mxfp4",
        src, method, format);
  out.mxfp4_experts = true;
  if (q->contains("config_groups") && q->at("config_groups").is_object()) {
    for (const auto& [name, g] : q->at("config_groups").items()) {
      if (g.is_object() && g.contains("weights") && g.at("weights").is_object()) {
        const json& w = g.at("weights");
        if (w.contains("group_size") && w.at("group_size").is_number_integer())
          out.group_size = int(std::clamp<int64_t>(w.at("group_size").get<int64_t>(), -1, 1 << 20));
      }
    }
  }
  if (out.group_size <= 0)
    fail("{}: `quantization_config` group_size must be positive, got {}", src, out.group_size);
  return out;
}

}  // namespace

bool ModelConfig::is_moe_layer(int layer) const {
  return moe.n_expert > 0 && layer >= moe.first_k_dense && moe.layer_freq > 0 && layer % moe.layer_freq == 0;
}

int ModelConfig::n_kda_layers() const {
  int n = 0;
  for (LayerKind k : layer_kind) n += k == LayerKind::Kda;
  return n;
}

int ModelConfig::n_mla_layers() const {
  return int(layer_kind.size()) - n_kda_layers();
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& source_name) {
  if (!j.is_object()) fail("{}: config must be a JSON object", source_name);
  ModelConfig c;
  const std::string top_type = j.contains("model_type") && j.at("model_type").is_string()
                                   ? j.at("model_type").get<std::string>()
                                   : std::string();
  if (top_type == "kimi_k3") {
    if (!j.contains("text_config") || !j.at("text_config").is_object())
      fail("{}: `model_type` is \"kimi_k3\" but object `text_config` is missing", source_name);
    c.multimodal_wrapper = true;
    c.has_vision_config = j.contains("vision_config") && !j.at("vision_config").is_null();
    parse_text(j.at("text_config"), source_name + ": text_config", c);
  } else {
    parse_text(j, source_name, c);
  }
  c.quant = parse_quantization(j, source_name);
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", source_name, e.what());  // name the file too
  }
  return c;
}

ModelConfig ModelConfig::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) fail("model {} does not exist", path);
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  const std::string text = read_file_capped(file, kMaxConfigFileBytes, "model config");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    if (!file.ends_with(".json"))
      fail("{} is not a JSON model config; expected a config.json or a checkpoint folder", file);
    fail("{}: invalid JSON: {}", file, e.what());
  }
  return from_json(j, file);
}

void ModelConfig::validate() const {
  auto positive = [](int v, const char* key) {
    if (v <= 0) fail("config: `{}` must be positive, got {}", key, v);
  };
  positive(vocab_size, "vocab_size");
  positive(hidden, "hidden_size");
  positive(n_layer, "num_hidden_layers");
  if (!(rms_norm_eps > 0.0f)) fail("config: `rms_norm_eps` must be positive, got {}", rms_norm_eps);
  if (int(layer_kind.size()) != n_layer)
    fail("config: {} layer kinds for `num_hidden_layers` {}", layer_kind.size(), n_layer);
  if (act == Activation::Situ) {
    if (!(situ_beta > 0.0f)) fail("config: `activation_situ_beta` must be positive, got {}", situ_beta);
    if (!(situ_linear_beta > 0.0f))
      fail("config: `activation_situ_linear_beta` must be positive, got {}", situ_linear_beta);
  }
  if (attn_res_block_size < 0)
    fail("config: `attn_res_block_size` must be >= 0, got {}", attn_res_block_size);
  for (auto [id, key] : {std::pair{pad_token_id, "pad_token_id"}, std::pair{bos_token_id, "bos_token_id"},
                         std::pair{eos_token_id, "eos_token_id"}}) {
    if (id < -1 || id >= vocab_size)
      fail("config: `{}` is {}, outside [0, vocab_size {})", key, id, vocab_size);
  }
  if (n_kda_layers() > 0) {
    positive(kda.n_head, "linear_attn_config.num_heads");
    positive(kda.head_dim, "linear_attn_config.head_dim");
    positive(kda.conv_kernel, "linear_attn_config.short_conv_kernel_size");
    if (kda.gate_lower_bound && !(*kda.gate_lower_bound < 0.0f))
      fail("config: `linear_attn_config.gate_lower_bound` must be negative, got {}", *kda.gate_lower_bound);
  }
  if (n_mla_layers() > 0) {
    positive(mla.n_head, "num_attention_heads");
    positive(mla.kv_lora_rank, "kv_lora_rank");
    positive(mla.qk_nope_head_dim, "qk_nope_head_dim");
    positive(mla.v_head_dim, "v_head_dim");
    if (mla.qk_rope_head_dim < 0)
      fail("config: `qk_rope_head_dim` must be >= 0, got {}", mla.qk_rope_head_dim);
    if (mla.q_lora_rank < 0) fail("config: `q_lora_rank` must be >= 0 or null, got {}", mla.q_lora_rank);
  }
  if (moe.n_expert < 0) fail("config: `num_experts` must be >= 0 (0: no MoE layers), got {}", moe.n_expert);
  if (moe.first_k_dense < 0 || moe.first_k_dense > n_layer)
    fail("config: `first_k_dense_replace` is {}, outside 0..{}", moe.first_k_dense, n_layer);
  positive(moe.layer_freq, "moe_layer_freq");
  bool any_moe = false, any_dense = false;
  for (int l = 0; l < n_layer; ++l) (is_moe_layer(l) ? any_moe : any_dense) = true;
  if (any_dense) positive(dense_intermediate, "intermediate_size");
  if (any_moe) {
    positive(moe.n_expert_per_token, "num_experts_per_token");
    positive(moe.expert_intermediate, "moe_intermediate_size");
    if (moe.n_expert_per_token > moe.n_expert)
      fail("config: `num_experts_per_token` {} exceeds `num_experts` {}", moe.n_expert_per_token,
           moe.n_expert);
    if (moe.n_shared_expert < 0)
      fail("config: `num_shared_experts` must be >= 0, got {}", moe.n_shared_expert);
    if (!(moe.routed_scaling > 0.0f))
      fail("config: `routed_scaling_factor` must be positive, got {}", moe.routed_scaling);
    if (moe.latent_dim < 0) fail("config: `routed_expert_hidden_size` must be >= 0, got {}", moe.latent_dim);
    if (moe.latent_norm && moe.latent_dim == 0)
      fail("config: `latent_moe_use_norm` is true but `routed_expert_hidden_size` is not set");
  }
}

}  // namespace ds
