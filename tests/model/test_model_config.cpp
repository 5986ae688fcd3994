// ModelConfig: both golden configs and the kimi_k3 wrapper parse to the right fields; every bad
// key, value and file gives a one-line error naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model_test_util.h"

namespace ds {
namespace {

using nlohmann::json;
using test::expect_error;
using test::golden_dir;

json kl_json() {
  return test::read_json(golden_dir("kimi-linear-tiny") + "/config.json");
}
json k3_json() {
  return test::read_json(golden_dir("k3-tiny") + "/config.json");
}

TEST(ModelConfig, KimiLinearFixture) {
  const ModelConfig c = ModelConfig::load(golden_dir("kimi-linear-tiny"));  // folder form
  EXPECT_EQ(c.model_type, "kimi_linear");
  EXPECT_FALSE(c.multimodal_wrapper);
  EXPECT_EQ(c.tensor_prefix(), "");
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden, 256);
  EXPECT_EQ(c.n_layer, 5);
  EXPECT_EQ(c.dense_intermediate, 512);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.act, Activation::Silu);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.attn_res_block_size, 0);
  EXPECT_EQ(c.bos_token_id, 500);
  EXPECT_EQ(c.eos_token_id, 502);
  EXPECT_EQ(c.pad_token_id, 511);
  EXPECT_EQ(c.max_position_tokens, 1048576);
  const std::vector<LayerKind> kinds{LayerKind::Kda, LayerKind::Kda, LayerKind::Kda, LayerKind::Mla,
                                     LayerKind::Kda};
  EXPECT_EQ(c.layer_kind, kinds);
  EXPECT_EQ(c.n_kda_layers(), 4);
  EXPECT_EQ(c.n_mla_layers(), 1);
  EXPECT_EQ(c.kda.n_head, 2);
  EXPECT_EQ(c.kda.head_dim, 128);
  EXPECT_EQ(c.kda.conv_kernel, 4);
  EXPECT_FALSE(c.kda.gate_lower_bound.has_value());
  EXPECT_FALSE(c.kda.full_rank_output_gate);
  EXPECT_EQ(c.mla.n_head, 4);
  EXPECT_EQ(c.mla.q_lora_rank, 0);  // null in the file
  EXPECT_EQ(c.mla.kv_lora_rank, 128);
  EXPECT_EQ(c.mla.qk_head_dim(), 96);
  EXPECT_EQ(c.mla.latent_dim(), 160);
  EXPECT_EQ(c.mla.v_head_dim, 64);
  EXPECT_FALSE(c.mla.output_gate);
  EXPECT_EQ(c.moe.n_expert, 8);
  EXPECT_EQ(c.moe.n_expert_per_token, 2);
  EXPECT_EQ(c.moe.n_shared_expert, 1);
  EXPECT_EQ(c.moe.expert_intermediate, 64);
  EXPECT_EQ(c.moe.first_k_dense, 1);
  EXPECT_TRUE(c.moe.renormalize);
  EXPECT_FLOAT_EQ(c.moe.routed_scaling, 2.446f);
  EXPECT_EQ(c.moe.latent_dim, 0);
  EXPECT_FALSE(c.is_moe_layer(0));
  for (int l = 1; l < 5; ++l) EXPECT_TRUE(c.is_moe_layer(l)) << l;
}

TEST(ModelConfig, K3Fixture) {
  const ModelConfig c = ModelConfig::load(golden_dir("k3-tiny") + "/config.json");  // file form
  EXPECT_FALSE(c.multimodal_wrapper);
  EXPECT_EQ(c.act, Activation::Situ);
  EXPECT_FLOAT_EQ(c.situ_beta, 4.0f);
  EXPECT_FLOAT_EQ(c.situ_linear_beta, 25.0f);
  EXPECT_EQ(c.attn_res_block_size, 2);
  const std::vector<LayerKind> kinds{LayerKind::Kda, LayerKind::Kda, LayerKind::Kda, LayerKind::Mla,
                                     LayerKind::Mla};
  EXPECT_EQ(c.layer_kind, kinds);
  ASSERT_TRUE(c.kda.gate_lower_bound.has_value());
  EXPECT_FLOAT_EQ(*c.kda.gate_lower_bound, -5.0f);
  EXPECT_TRUE(c.kda.full_rank_output_gate);
  EXPECT_EQ(c.mla.q_lora_rank, 96);
  EXPECT_TRUE(c.mla.output_gate);
  EXPECT_EQ(c.moe.n_expert, 16);
  EXPECT_EQ(c.moe.n_expert_per_token, 4);
  EXPECT_EQ(c.moe.n_shared_expert, 2);
  EXPECT_EQ(c.moe.expert_intermediate, 48);
  EXPECT_EQ(c.moe.latent_dim, 128);
  EXPECT_TRUE(c.moe.latent_norm);
  EXPECT_FLOAT_EQ(c.moe.routed_scaling, 1.0f);
  EXPECT_EQ(c.max_position_tokens, 1048576);
}

TEST(ModelConfig, KimiK3Wrapper) {
  const json j = {{"model_type", "kimi_k3"},
                  {"architectures", {"KimiK3ForConditionalGeneration"}},
                  {"text_config", k3_json()},
                  {"vision_config", {{"model_type", "moonvit"}, {"num_hidden_layers", 27}}}};
  const ModelConfig c = ModelConfig::from_json(j, "wrapped.json");
  EXPECT_TRUE(c.multimodal_wrapper);
  EXPECT_TRUE(c.has_vision_config);
  EXPECT_EQ(c.tensor_prefix(), "language_model.");
  EXPECT_EQ(c.model_type, "kimi_linear");
  EXPECT_EQ(c.hidden, 256);
  EXPECT_EQ(c.mla.q_lora_rank, 96);

  expect_error(
      [] {
        ModelConfig::from_json({{"model_type", "kimi_k3"}}, "w.json");
      },
      {"w.json", "text_config"});
}

TEST(ModelConfig, QuantizationConfigTopLevelOrTextConfig) {
  EXPECT_FALSE(ModelConfig::from_json(kl_json(), "kl.json").quant.mxfp4_experts);
  EXPECT_EQ(ModelConfig::from_json(kl_json(), "kl.json").quant.routed_expert_bits(), 16.0);
  const json mxfp4 = {{"quant_method", "compressed-tensors"},
                      {"format", "mxfp4-pack-quantized"},
                      {"config_groups", {{"group_0", {{"weights", {{"group_size", 32}}}}}}}};
  json top = {{"model_type", "kimi_k3"}, {"text_config", k3_json()}, {"quantization_config", mxfp4}};
  const ModelConfig a = ModelConfig::from_json(top, "top.json");
  EXPECT_TRUE(a.quant.mxfp4_experts);
  EXPECT_EQ(a.quant.routed_expert_bits(), 4.25);
  json inner = k3_json();
  inner["quantization_config"] = mxfp4;
  inner["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 16;
  const ModelConfig b =
      ModelConfig::from_json({{"model_type", "kimi_k3"}, {"text_config", inner}}, "in.json");
  EXPECT_EQ(b.quant.routed_expert_bits(), 4.5);
  json bad = kl_json();
  bad["quantization_config"] = {{"quant_method", "awq"}};
  expect_error([&] { ModelConfig::from_json(bad, "awq.json"); },
               {"awq.json", "unsupported quantization_config", "awq"});
  bad["quantization_config"] = mxfp4;
  bad["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 0;
  expect_error([&] { ModelConfig::from_json(bad, "g.json"); }, {"g.json", "group_size", "0"});
}

// Applies `edit` to the Kimi Linear fixture config and expects from_json to fail naming `parts`.
void expect_bad(const std::function<void(json&)>& edit, std::initializer_list<std::string> parts) {
  json j = kl_json();
  edit(j);
  expect_error([&] { ModelConfig::from_json(j, "bad.json"); }, parts);
}

TEST(ModelConfig, LayerInBothLists) {
  expect_bad(
      [](json& j) {
        j["linear_attn_config"]["kda_layers"] = {1, 2, 3, 4, 5};
      },
      {"layer 4", "both", "kda_layers", "full_attn_layers"});
}

TEST(ModelConfig, LayerInNeitherList) {
  expect_bad([](json& j) { j["linear_attn_config"]["kda_layers"] = {1, 2, 3}; }, {"layer 5", "neither"});
}

TEST(ModelConfig, LayerOutOfRangeOrRepeated) {
  expect_bad(
      [](json& j) {
        j["linear_attn_config"]["kda_layers"] = {0, 1, 2, 3, 5};
      },
      {"linear_attn_config.kda_layers", "layer 0", "1..5"});
  expect_bad([](json& j) { j["linear_attn_config"]["full_attn_layers"] = {4, 6}; }, {"layer 6", "1..5"});
  expect_bad([](json& j) { j["linear_attn_config"]["kda_layers"] = {1, 2, 2, 3, 5}; }, {"layer 2 twice"});
  expect_bad(
      [](json& j) {
        j["linear_attn_config"]["kda_layers"] = {1, "2", 3, 5};
      },
      {"linear_attn_config.kda_layers", "\"2\""});
}

TEST(ModelConfig, TopKAboveExperts) {
  expect_bad([](json& j) { j["num_experts_per_token"] = 9; },
             {"num_experts_per_token", "9", "num_experts", "8"});
}

TEST(ModelConfig, BadValuesNameKeyAndValue) {
  expect_bad([](json& j) { j["hidden_size"] = -3; }, {"bad.json", "hidden_size", "-3"});
  expect_bad([](json& j) { j["num_experts"] = -1; }, {"bad.json", "num_experts", "-1"});
  expect_bad([](json& j) { j["hidden_size"] = "256"; }, {"bad.json", "hidden_size", "integer", "\"256\""});
  expect_bad([](json& j) { j["hidden_size"] = 1e30; }, {"hidden_size"});
  expect_bad([](json& j) { j.erase("vocab_size"); }, {"missing key", "vocab_size"});
  expect_bad([](json& j) { j["hidden_act"] = "gelu"; }, {"hidden_act", "gelu"});
  expect_bad([](json& j) { j.erase("linear_attn_config"); }, {"linear_attn_config"});
  expect_bad([](json& j) { j["linear_attn_config"]["num_heads"] = 0; },
             {"linear_attn_config.num_heads", "0"});
  expect_bad([](json& j) { j["kv_lora_rank"] = 0; }, {"kv_lora_rank", "0"});
  expect_bad([](json& j) { j["mla_use_nope"] = false; }, {"mla_use_nope"});
  expect_bad([](json& j) { j["num_expert_group"] = 8; }, {"num_expert_group", "8"});
  expect_bad([](json& j) { j["moe_router_activation_func"] = "softmax"; }, {"softmax"});
  expect_bad([](json& j) { j["eos_token_id"] = 512; }, {"eos_token_id", "512"});
  expect_bad([](json& j) { j["model_type"] = "llama"; }, {"model_type", "llama"});
  expect_bad([](json& j) { j["first_k_dense_replace"] = 6; }, {"first_k_dense_replace", "6"});
  expect_bad([](json& j) { j["tie_word_embeddings"] = 1; }, {"tie_word_embeddings"});
  expect_bad([](json& j) { j["linear_attn_config"]["gate_lower_bound"] = 1.0; }, {"gate_lower_bound"});
  expect_bad([](json& j) { j["latent_moe_use_norm"] = true; },
             {"latent_moe_use_norm", "routed_expert_hidden_size"});
  expect_error([] { ModelConfig::from_json(json::array(), "arr.json"); }, {"arr.json", "object"});
}

TEST(ModelConfig, EosListAndIntegralFloats) {
  json j = kl_json();
  j["eos_token_id"] = {502, 503};
  j["hidden_size"] = 256.0;
  const ModelConfig c = ModelConfig::from_json(j, "ok.json");
  EXPECT_EQ(c.eos_token_id, 502);
  EXPECT_EQ(c.hidden, 256);
}

TEST(ModelConfig, LoadErrors) {
  test::TempDir dir;
  expect_error([&] { ModelConfig::load(dir.file("none.json")); }, {"none.json"});
  expect_error([&] { ModelConfig::load(dir.path()); }, {"config.json"});  // folder without config.json
  test::write_bytes(dir.file("config.json"), "{\"hidden_size\": 3,");
  expect_error([&] { ModelConfig::load(dir.path()); }, {"config.json", "invalid JSON"});
}

}  // namespace
}  // namespace ds
