// The real Kimi K3 tensor inventory (as published: names, shapes, dtypes, MXFP4 routed experts,
// A_log padded to 128) written as sparse shard files whose headers are real and whose data is a
// hole, then bound header-only through the kimi_k3 wrapper config. ~500k tensors, ~1.5 TB logical.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "model/weights.h"
#include "model_test_util.h"

namespace ds {
namespace {

using nlohmann::json;
using Shape = std::vector<int64_t>;

// K3 text_config as published, inside the kimi_k3 multimodal wrapper.
json k3_wrapper_config() {
  json mla_layers = json::array(), kda_layers = json::array();
  for (int l = 1; l <= 93; ++l) (l % 4 == 0 || l == 93 ? mla_layers : kda_layers).push_back(l);
  const json text = {{"model_type", "kimi_linear"},
                     {"architectures", {"KimiLinearForCausalLM"}},
                     {"vocab_size", 163840},
                     {"hidden_size", 7168},
                     {"num_hidden_layers", 93},
                     {"intermediate_size", 33792},
                     {"rms_norm_eps", 1e-5},
                     {"hidden_act", "situ"},
                     {"activation_situ_beta", 4.0},
                     {"activation_situ_linear_beta", 25.0},
                     {"num_attention_heads", 96},
                     {"q_lora_rank", 1536},
                     {"kv_lora_rank", 512},
                     {"qk_nope_head_dim", 128},
                     {"qk_rope_head_dim", 64},
                     {"v_head_dim", 128},
                     {"mla_use_nope", true},
                     {"mla_use_output_gate", true},
                     {"num_experts", 896},
                     {"num_experts_per_token", 16},
                     {"num_shared_experts", 2},
                     {"moe_intermediate_size", 3072},
                     {"routed_expert_hidden_size", 3584},
                     {"latent_moe_use_norm", true},
                     {"moe_router_activation_func", "sigmoid"},
                     {"moe_renormalize", true},
                     {"routed_scaling_factor", 1.0},
                     {"first_k_dense_replace", 1},
                     {"moe_layer_freq", 1},
                     {"topk_method", "noaux_tc"},
                     {"num_expert_group", 1},
                     {"topk_group", 1},
                     {"attn_res_block_size", 12},
                     {"max_position_embeddings", 1048576},
                     {"tie_word_embeddings", false},
                     {"num_nextn_predict_layers", 0},
                     {"linear_attn_config",
                      {{"kda_layers", kda_layers},
                       {"full_attn_layers", mla_layers},
                       {"num_heads", 96},
                       {"head_dim", 128},
                       {"short_conv_kernel_size", 4},
                       {"gate_lower_bound", -5.0},
                       {"use_full_rank_gate", true}}}};
  return {
      {"model_type", "kimi_k3"},
      {"architectures", {"KimiK3ForConditionalGeneration"}},
      {"text_config", text},
      {"vision_config", {{"num_hidden_layers", 27}, {"hidden_size", 1024}}},
      {"quantization_config", {{"quant_method", "compressed-tensors"}, {"format", "mxfp4-pack-quantized"}}}};
}

// Accumulates one shard's header text and its data size.
class ShardWriter {
 public:
  void add(const std::string& name, const char* dtype, const Shape& shape) {
    size_t numel = 1;
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) {
      numel *= size_t(shape[i]);
      if (i) dims += ',';
      dims += std::to_string(shape[i]);
    }
    const size_t elt = std::string(dtype) == "F32" ? 4 : std::string(dtype) == "BF16" ? 2 : 1;
    const size_t end = offset_ + numel * elt;
    header_ += fmt::format("{}\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                           header_.size() > 1 ? "," : "", name, dtype, dims, offset_, end);
    names_.push_back(name);
    offset_ = end;
  }
  // Writes header + a sparse data area; false if the file system refuses the size.
  bool write(const std::string& path) {
    std::string text = header_ + "}";
    text.append((8 - text.size() % 8) % 8, ' ');
    test::write_bytes(path, test::raw_safetensors(text, 0));
    const int fd = ::open(path.c_str(), O_WRONLY);
    const bool ok = fd >= 0 && ::ftruncate(fd, off_t(8 + text.size() + offset_)) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::string header_ = "{";
  size_t offset_ = 0;
  std::vector<std::string> names_;
};

void add_layer(ShardWriter& s, int l, bool mla) {
  const std::string p = fmt::format("language_model.model.layers.{}.", l);
  const int64_t d = 7168;
  for (const char* n :
       {"input_layernorm", "post_attention_layernorm", "self_attention_res_norm", "mlp_res_norm"})
    s.add(p + n + ".weight", "BF16", {d});
  s.add(p + "self_attention_res_proj.weight", "BF16", {1, d});
  s.add(p + "mlp_res_proj.weight", "BF16", {1, d});
  const std::string a = p + "self_attn.";
  if (mla) {
    s.add(a + "q_a_proj.weight", "BF16", {1536, d});
    s.add(a + "q_a_layernorm.weight", "BF16", {1536});
    s.add(a + "q_b_proj.weight", "BF16", {18432, 1536});
    s.add(a + "kv_a_proj_with_mqa.weight", "BF16", {576, d});
    s.add(a + "kv_a_layernorm.weight", "BF16", {512});
    s.add(a + "kv_b_proj.weight", "BF16", {24576, 512});
    s.add(a + "g_proj.weight", "BF16", {12288, d});
    s.add(a + "o_proj.weight", "BF16", {d, 12288});
  } else {
    for (const char* n : {"q_proj", "k_proj", "v_proj", "g_proj"})
      s.add(a + n + ".weight", "BF16", {12288, d});
    for (const char* n : {"q_conv1d", "k_conv1d", "v_conv1d"}) s.add(a + n + ".weight", "F32", {12288, 1, 4});
    s.add(a + "f_a_proj.weight", "BF16", {128, d});
    s.add(a + "f_b_proj.weight", "BF16", {12288, 128});
    s.add(a + "A_log", "F32", {128});  // 128 stored for 96 heads
    s.add(a + "dt_bias", "F32", {12288});
    s.add(a + "b_proj.weight", "BF16", {96, d});
    s.add(a + "o_norm.weight", "F32", {128});
    s.add(a + "o_proj.weight", "BF16", {d, 12288});
  }
  if (l == 0) {
    s.add(p + "mlp.gate_proj.weight", "BF16", {33792, d});
    s.add(p + "mlp.up_proj.weight", "BF16", {33792, d});
    s.add(p + "mlp.down_proj.weight", "BF16", {d, 33792});
    return;
  }
  const std::string m = p + "block_sparse_moe.";
  s.add(m + "gate.weight", "BF16", {896, d});
  s.add(m + "gate.e_score_correction_bias", "F32", {896});
  s.add(m + "routed_expert_down_proj.weight", "BF16", {3584, d});
  s.add(m + "routed_expert_norm.weight", "BF16", {3584});
  s.add(m + "routed_expert_up_proj.weight", "BF16", {d, 3584});
  s.add(m + "shared_experts.gate_proj.weight", "BF16", {6144, d});
  s.add(m + "shared_experts.up_proj.weight", "BF16", {6144, d});
  s.add(m + "shared_experts.down_proj.weight", "BF16", {d, 6144});
  for (int e = 0; e < 896; ++e) {
    const std::string x = fmt::format("{}experts.{}.", m, e);
    for (const char* w : {"w1", "w3"}) {
      s.add(x + w + ".weight_packed", "U8", {3072, 1792});
      s.add(x + w + ".weight_scale", "U8", {3072, 112});
    }
    s.add(x + "w2.weight_packed", "U8", {3584, 1536});
    s.add(x + "w2.weight_scale", "U8", {3584, 96});
  }
}

int64_t linear_params(const LinearWeight& w) {
  return w.out * w.in;
}

TEST(K3Inventory, RealTensorInventoryBindsHeaderOnly) {
  test::TempDir dir;
  test::write_json(dir.file("config.json"), k3_wrapper_config());
  std::string weight_map;  // JSON object body, written by hand (500k entries)
  size_t n_tensors = 0;
  auto flush = [&](ShardWriter& s, const std::string& file) {
    if (!s.write(dir.file(file))) return false;
    for (const std::string& n : s.names())
      weight_map += fmt::format("{}\"{}\":\"{}\"", weight_map.empty() ? "" : ",", n, file);
    n_tensors += s.names().size();
    return true;
  };
  ShardWriter globals;
  globals.add("language_model.model.embed_tokens.weight", "BF16", {163840, 7168});
  globals.add("language_model.lm_head.weight", "BF16", {163840, 7168});
  globals.add("language_model.model.norm.weight", "BF16", {7168});
  globals.add("language_model.model.output_attn_res_norm.weight", "BF16", {7168});
  globals.add("language_model.model.output_attn_res_proj.weight", "BF16", {1, 7168});
  globals.add("vision_tower.patch_embed.proj.weight", "BF16", {1024, 3, 14, 14});
  globals.add("mm_projector.linear_1.weight", "BF16", {7168, 4096});
  if (!flush(globals, "model-globals.safetensors")) GTEST_SKIP() << "file system refuses sparse files";
  for (int l = 0; l < 93; ++l) {
    ShardWriter s;
    add_layer(s, l, (l + 1) % 4 == 0 || l == 92);
    ASSERT_TRUE(flush(s, fmt::format("model-{:05}-of-00093.safetensors", l + 1)));
  }
  test::write_bytes(dir.file("model.safetensors.index.json"), "{\"weight_map\":{" + weight_map + "}}");

  const ModelConfig cfg = ModelConfig::load(dir.path());
  EXPECT_EQ(cfg.n_kda_layers(), 69);
  EXPECT_EQ(cfg.n_mla_layers(), 24);
  const WeightFiles ck = WeightFiles::open(dir.path(), cfg.tensor_prefix(), /*header_only=*/true);
  EXPECT_EQ(ck.size(), n_tensors);
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("ignored 2 tensor(s)"), std::string::npos);

  const LayerWeights& kda = w.layers[0];
  ASSERT_TRUE(kda.kda && kda.mlp && kda.attn_res);
  EXPECT_EQ(kda.kda->a_log.shape, Shape{128});
  EXPECT_EQ(kda.kda->q_conv.dtype, DType::F32);
  const LayerWeights& mla = w.layers[92];
  ASSERT_TRUE(mla.mla && mla.moe);
  EXPECT_EQ(mla.mla->q_b_proj->shape, (Shape{18432, 1536}));
  const ExpertWeights& e = mla.moe->experts[895];
  ASSERT_TRUE(e.w1.is_mxfp4() && e.w3.is_mxfp4() && e.w2.is_mxfp4());
  EXPECT_EQ(e.w2.weight.shape, (Shape{3584, 1536}));
  EXPECT_EQ(e.w2.scale->shape, (Shape{3584, 96}));
  EXPECT_EQ(e.w2.in, 3072);
  EXPECT_EQ(e.w1.in, 3584);
  EXPECT_EQ(e.w1.weight.data, nullptr);  // header-only

  // Logical parameter count of the routed experts: 92 * 896 * 3 * 3072 * 3584 (~2.72T).
  int64_t routed = 0;
  for (const LayerWeights& l : w.layers) {
    if (!l.moe) continue;
    for (const ExpertWeights& x : l.moe->experts)
      routed += linear_params(x.w1) + linear_params(x.w2) + linear_params(x.w3);
  }
  EXPECT_EQ(routed, int64_t(92) * 896 * 3 * 3072 * 3584);
}

}  // namespace
}  // namespace ds
