// Model and hardware profiles: bundled files parse, counts match the published checkpoints and the tiny
// fixtures' manifests exactly, bad input gives one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "error_message.h"
#include "plan/hardware_profile.h"
#include "plan/model_profile.h"

namespace ds {
namespace {

using ds::testing::error_message;

const std::string kData = std::string(DS_SOURCE_DIR) + "/data/profiles";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("ds_test_profile_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(HardwareProfile, BundledProfilesParseWithSources) {
  for (const char* name : {"h100", "h200", "b200", "b300"}) {
    const HardwareProfile hw = HardwareProfile::load(name);
    EXPECT_EQ(hw.name, name);
    EXPECT_GT(hw.hbm_bytes, 60e9);
    EXPECT_GT(hw.hbm_bw_bytes_s, 3e12);
    EXPECT_GE(hw.fp8_flops, hw.bf16_flops);
    EXPECT_TRUE(hw.sources.contains("hbm_bytes")) << name;
    EXPECT_TRUE(hw.sources.contains("runtime_reserve_bytes")) << name;
  }
  const HardwareProfile b300 = HardwareProfile::load(kData + "/hardware/b300.json");
  EXPECT_EQ(b300.hbm_bytes, 275040.0 * 1024 * 1024);  // device-reported total
  EXPECT_EQ(b300.hbm_bw_bytes_s, 8e12);
  EXPECT_EQ(b300.peak_flops(4), 13.5e15);
  const HardwareProfile h200 = HardwareProfile::load("h200");
  EXPECT_EQ(h200.peak_flops(4), h200.fp8_flops);  // Hopper: no FP4 tensor cores
}

TEST(HardwareProfile, BadInputIsOneClearError) {
  EXPECT_NE(
      error_message([] { HardwareProfile::load("tpu9000"); }).find("unknown hardware profile \"tpu9000\""),
      std::string::npos);
  EXPECT_NE(error_message([] { HardwareProfile::load("/nonexistent/x.json"); }).find("/nonexistent/x.json"),
            std::string::npos);
  const std::string bad = write_temp("bad.json", "{\"name\": \"x\",");
  EXPECT_NE(error_message([&] { HardwareProfile::load(bad); }).find("invalid JSON"), std::string::npos);

  nlohmann::json j = nlohmann::json::parse(std::ifstream(kData + "/hardware/b300.json"));
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json c = j;
    c[key] = v;
    return c;
  };
  EXPECT_NE(error_message([&] {
              HardwareProfile::from_json(with("memory_efficiency", 1.5), "hw");
            }).find("`memory_efficiency` is an efficiency in (0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              HardwareProfile::from_json(with("hbm_bytes", "lots"), "hw");
            }).find("`hbm_bytes` must be a number"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              HardwareProfile::from_json(with("hbm_bw_bytes_s", -1), "hw");
            }).find("`hbm_bw_bytes_s` must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              HardwareProfile::from_json(with("hbm_bandwidth", 1), "hw");
            }).find("unknown key `hbm_bandwidth`"),
            std::string::npos);
  nlohmann::json no_src = j;
  no_src["sources"].erase("fp8_flops");
  EXPECT_NE(
      error_message([&] { HardwareProfile::from_json(no_src, "hw"); }).find("`sources.fp8_flops` is missing"),
      std::string::npos);
  nlohmann::json missing = j;
  missing.erase("nvlink_bw_bytes_s");
  EXPECT_NE(error_message([&] {
              HardwareProfile::from_json(missing, "hw");
            }).find("missing key `nvlink_bw_bytes_s`"),
            std::string::npos);
}

TEST(ModelProfile, KimiLinearCountsAreExact) {
  const ModelProfile m = ModelProfile::load("kimi-linear-48b");
  EXPECT_EQ(m.total_params(), 49'122'681'728);  // the published Kimi-Linear-48B-A3B
  // Category totals of the published checkpoint inventory.
  EXPECT_EQ(m.weight(WeightKind::Kda).params, 790'285'440);
  EXPECT_EQ(m.weight(WeightKind::Mla).params, 203'804'160);
  EXPECT_EQ(m.weight(WeightKind::Router).params, 15'342'080);
  EXPECT_EQ(m.weight(WeightKind::SharedExpert).params, 184'025'088);
  EXPECT_EQ(m.weight(WeightKind::DenseMlp).params, 63'700'992);
  EXPECT_EQ(m.routed_expert_format, "bf16");
  EXPECT_EQ(m.kv_bytes_per_token(2), 8'064);   // 7 x 576 x 2
  EXPECT_EQ(m.kv_bytes_per_token(4), 16'128);  // f32 latents (the CPU engine)
  EXPECT_THROW(m.kv_bytes_per_token(3), Error);
  EXPECT_EQ(m.kda_recurrent_bytes(), 41'943'040);  // 20 x 32 x 128^2 x 4
  EXPECT_EQ(m.kda_conv_bytes(), 1'474'560);        // 20 x 3 x 4096 x 3 x 2
  EXPECT_EQ(m.weight_bytes(), 2.0 * 49'122'681'728);
  // ~3B active (model name "A3B").
  EXPECT_NEAR(double(m.active_params_per_token()) / 1e9, 3.0, 0.25);
}

TEST(ModelProfile, KimiK3MatchesPublishedTotals) {
  const ModelProfile m = ModelProfile::load(kData + "/models/kimi-k3/config.json");
  EXPECT_TRUE(m.config.multimodal_wrapper);
  EXPECT_NEAR(double(m.total_params()) / 1e12, 2.78, 0.01);            // published: ≈ 2.78T
  EXPECT_NEAR(double(m.active_params_per_token()) / 1e9, 104.2, 1.0);  // published: 104.2B activated
  EXPECT_EQ(m.weight(WeightKind::RoutedExpert).params, 92LL * 896 * 3 * 3072 * 3584);
  EXPECT_EQ(m.routed_expert_format, "mxfp4");
  EXPECT_DOUBLE_EQ(m.weight(WeightKind::RoutedExpert).bits, 4.25);  // E2M1 + E8M0 per 32
  EXPECT_EQ(m.kv_bytes_per_token(2), 27'648);                       // 24 x 1152
  EXPECT_EQ(m.kv_bytes_per_token(1), 13'824);                       // FP8 latent
  EXPECT_EQ(m.kda_recurrent_bytes(), 69LL * 96 * 128 * 128 * 4);    // ≈ 434 MB
  EXPECT_EQ(m.n_moe_layers(), 92);
  // Weights: ~1.45 TB of MXFP4 experts + ~0.11 TB bf16 rest ("~1.5 TB" MXFP4 checkpoint).
  EXPECT_NEAR(m.weight_bytes() / 1e12, 1.56, 0.02);
}

// Configs of the tiny golden fixtures (../shared/fixtures/*/config.json), with the exact
// parameter counts their manifests list.
constexpr const char* kTinyKimiLinear = R"({"model_type":"kimi_linear","vocab_size":512,"hidden_size":256,
 "intermediate_size":512,"num_hidden_layers":5,"num_attention_heads":4,"hidden_act":"silu","q_lora_rank":null,
 "kv_lora_rank":128,"qk_nope_head_dim":64,"qk_rope_head_dim":32,"v_head_dim":64,"mla_use_nope":true,
 "num_experts":8,"num_experts_per_token":2,"num_shared_experts":1,"moe_intermediate_size":64,
 "first_k_dense_replace":1,"moe_layer_freq":1,"bos_token_id":500,"eos_token_id":502,"pad_token_id":511,
 "linear_attn_config":{"kda_layers":[1,2,3,5],"full_attn_layers":[4],"num_heads":2,"head_dim":128,
 "short_conv_kernel_size":4}})";
constexpr const char* kTinyK3 = R"({"model_type":"kimi_linear","vocab_size":512,"hidden_size":256,
 "intermediate_size":512,"num_hidden_layers":5,"num_attention_heads":4,"hidden_act":"situ","q_lora_rank":96,
 "kv_lora_rank":128,"qk_nope_head_dim":64,"qk_rope_head_dim":32,"v_head_dim":64,"mla_use_nope":true,
 "mla_use_output_gate":true,"num_experts":16,"num_experts_per_token":4,"num_shared_experts":2,
 "moe_intermediate_size":48,"routed_expert_hidden_size":128,"latent_moe_use_norm":true,
 "first_k_dense_replace":1,"moe_layer_freq":1,"attn_res_block_size":2,"bos_token_id":500,"eos_token_id":502,
 "pad_token_id":511,"linear_attn_config":{"kda_layers":[1,2,3],"full_attn_layers":[4,5],"num_heads":2,
 "head_dim":128,"short_conv_kernel_size":4,"gate_lower_bound":-5.0,"use_full_rank_gate":true}})";

TEST(ModelProfile, TinyFixtureCountsAreExact) {
  const auto kl = ModelConfig::from_json(nlohmann::json::parse(kTinyKimiLinear), "tiny-kl");
  EXPECT_EQ(ModelProfile::from_config(kl, "tiny-kl").total_params(), 4'295'080);
  const auto k3 = ModelConfig::from_json(nlohmann::json::parse(kTinyK3), "tiny-k3");
  EXPECT_EQ(ModelProfile::from_config(k3, "tiny-k3").total_params(), 4'207'494);
}

TEST(ModelProfile, TensorParallelShardsAllButReplicatedTensors) {
  const ModelProfile m = ModelProfile::load("kimi-k3");
  const double tp1 = m.weight_bytes_per_gpu(1), tp8 = m.weight_bytes_per_gpu(8);
  EXPECT_DOUBLE_EQ(tp1, m.weight_bytes());
  EXPECT_GT(tp8, tp1 / 8);  // replicated router / latent / MLA down-projections
  double replicated = 0;
  for (const WeightGroup& g : m.weights) replicated += double(g.replicated_params) * g.bits / 8;
  EXPECT_NEAR(tp8, (tp1 - replicated) / 8 + replicated, 1.0);
}

TEST(ModelProfile, KdaChunkFlopFormula) {
  // 12 C^3 + 8 C^2 D + 6 C D^2 at C = 64, D = 128.
  EXPECT_EQ(ModelProfile::kda_chunk_flops(64, 128), 3'145'728.0 + 4'194'304.0 + 6'291'456.0);
  EXPECT_EQ(ModelProfile::kda_chunk_flops(1, 1), 26.0);
  const ModelProfile m = ModelProfile::load("kimi-linear-48b");
  EXPECT_DOUBLE_EQ(m.kda_flops(4 * 64, 64), 4.0 * 20 * 32 * ModelProfile::kda_chunk_flops(64, 128));
  EXPECT_DOUBLE_EQ(m.kda_flops(1, 64), 20.0 * 32 * 7 * 128 * 128);  // decode: 7 D^2 per head
}

TEST(ModelProfile, BadModelInputIsOneClearError) {
  EXPECT_NE(error_message([] { ModelProfile::load("kimi-k9"); }).find("unknown model profile \"kimi-k9\""),
            std::string::npos);
  const std::string bad = write_temp("model_bad.json", "[1, 2");
  EXPECT_NE(error_message([&] { ModelProfile::load(bad); }).find("invalid JSON"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(kTinyKimiLinear);
  j["quantization_config"] = {{"quant_method", "awq"}};
  const std::string awq = write_temp("model_awq.json", j.dump());
  EXPECT_NE(error_message([&] { ModelProfile::load(awq); }).find("unsupported quantization_config"),
            std::string::npos);
}

}  // namespace
}  // namespace ds
