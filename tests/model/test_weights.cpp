// ModelWeights::bind: both fixtures bind every tensor; missing, mis-shaped, wrong-dtype and extra
// tensors are named errors; A_log layouts; MXFP4 experts; the kimi_k3 wrapper.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/weights.h"
#include "model_test_util.h"

namespace ds {
namespace {

using nlohmann::json;
using test::expect_error;
using test::golden_dir;
using test::OwnedTensor;
using test::TempDir;

using Shape = std::vector<int64_t>;

OwnedTensor* find_tensor(std::vector<OwnedTensor>& ts, const std::string& name) {
  for (OwnedTensor& t : ts) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST(Weights, KimiLinearFixtureBindsEveryTensor) {
  const std::string dir = golden_dir("kimi-linear-tiny");
  const ModelConfig cfg = ModelConfig::load(dir);
  const WeightFiles ck = WeightFiles::open(dir, cfg.tensor_prefix());
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  EXPECT_TRUE(ck.unused_names().empty());
  EXPECT_TRUE(w.notes.empty());
  ASSERT_EQ(w.layers.size(), 5u);
  EXPECT_EQ(w.embed.shape, (Shape{512, 256}));
  EXPECT_EQ(w.lm_head.name, "lm_head.weight");
  EXPECT_FALSE(w.output_res.has_value());
  const LayerWeights& l0 = w.layers[0];
  ASSERT_TRUE(l0.kda && l0.mlp);
  EXPECT_FALSE(l0.mla || l0.moe || l0.attn_res);
  EXPECT_EQ(l0.mlp->gate_proj.shape, (Shape{512, 256}));
  EXPECT_EQ(l0.kda->a_log.shape, (Shape{1, 1, 2, 1}));
  EXPECT_EQ(l0.kda->a_log.dtype, DType::F32);
  EXPECT_EQ(l0.kda->q_conv.shape, (Shape{256, 1, 4}));
  EXPECT_TRUE(l0.kda->g_a_proj && l0.kda->g_b_proj);
  EXPECT_FALSE(l0.kda->g_proj);
  const LayerWeights& l3 = w.layers[3];
  ASSERT_TRUE(l3.mla && l3.moe);
  EXPECT_EQ(l3.kind, LayerKind::Mla);
  EXPECT_TRUE(l3.mla->q_proj.has_value());
  EXPECT_FALSE(l3.mla->q_a_proj || l3.mla->g_proj);
  EXPECT_EQ(l3.mla->kv_a_proj.shape, (Shape{160, 256}));
  EXPECT_EQ(l3.mla->kv_b_proj.shape, (Shape{512, 128}));
  ASSERT_EQ(l3.moe->experts.size(), 8u);
  EXPECT_FALSE(l3.moe->experts[7].w2.is_mxfp4());
  EXPECT_EQ(l3.moe->experts[7].w2.weight.name, "model.layers.3.block_sparse_moe.experts.7.w2.weight");
  EXPECT_EQ(l3.moe->experts[7].w2.weight.shape, (Shape{256, 64}));
  ASSERT_TRUE(l3.moe->shared.has_value());
  EXPECT_EQ(l3.moe->shared->down_proj.shape, (Shape{256, 64}));
  EXPECT_FALSE(l3.moe->latent_down.has_value());
  EXPECT_NE(l3.moe->e_score_correction_bias.data, nullptr);
}

TEST(Weights, K3FixtureBindsEveryTensor) {
  const std::string dir = golden_dir("k3-tiny");
  const ModelConfig cfg = ModelConfig::load(dir);
  const WeightFiles ck = WeightFiles::open(dir, cfg.tensor_prefix());
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  EXPECT_TRUE(ck.unused_names().empty());
  EXPECT_EQ(ck.size(), 320u);
  ASSERT_TRUE(w.output_res.has_value());
  EXPECT_EQ(w.output_res->proj.shape, (Shape{1, 256}));
  const LayerWeights& l1 = w.layers[1];
  ASSERT_TRUE(l1.kda && l1.moe && l1.attn_res && l1.mlp_res);
  EXPECT_TRUE(l1.kda->g_proj.has_value());
  EXPECT_FALSE(l1.kda->g_a_proj || l1.kda->g_b_proj);
  EXPECT_EQ(l1.kda->a_log.shape, Shape{2});
  EXPECT_EQ(l1.kda->o_norm.dtype, DType::F32);
  ASSERT_TRUE(l1.moe->latent_down && l1.moe->latent_norm && l1.moe->latent_up);
  EXPECT_EQ(l1.moe->latent_down->shape, (Shape{128, 256}));
  EXPECT_EQ(l1.moe->experts[15].w1.in, 128);
  EXPECT_EQ(l1.moe->experts[15].w2.weight.shape, (Shape{128, 48}));
  EXPECT_EQ(l1.moe->shared->gate_proj.shape, (Shape{96, 256}));
  const LayerWeights& l4 = w.layers[4];
  ASSERT_TRUE(l4.mla);
  EXPECT_FALSE(l4.mla->q_proj.has_value());
  ASSERT_TRUE(l4.mla->q_a_proj && l4.mla->q_a_layernorm && l4.mla->q_b_proj && l4.mla->g_proj);
  EXPECT_EQ(l4.mla->q_b_proj->shape, (Shape{384, 96}));
  EXPECT_EQ(l4.mla->g_proj->shape, (Shape{256, 256}));
}

// Rewrites the fixture with `edit`, then binds and expects an error containing `parts`.
void expect_bind_error(const std::string& fixture, const std::function<void(std::vector<OwnedTensor>&)>& edit,
                       std::initializer_list<std::string> parts) {
  TempDir dir;
  test::copy_checkpoint(fixture, dir.path(), edit);
  const ModelConfig cfg = ModelConfig::load(dir.path());
  const WeightFiles ck = WeightFiles::open(dir.path());
  expect_error([&] { ModelWeights::bind(cfg, ck); }, parts);
}

TEST(Weights, MissingTensor) {
  const std::string name = "model.layers.2.self_attn.f_b_proj.weight";
  expect_bind_error("kimi-linear-tiny",
                    [&](auto& ts) { std::erase_if(ts, [&](auto& t) { return t.name == name; }); },
                    {"missing tensor `" + name + "`", "[256, 128]"});
}

TEST(Weights, MisShapedTensor) {
  const std::string name = "model.layers.1.self_attn.o_norm.weight";
  expect_bind_error("kimi-linear-tiny",
                    [&](auto& ts) {
                      OwnedTensor* t = find_tensor(ts, name);
                      t->shape = {64};
                      t->bytes.resize(128);
                    },
                    {"`" + name + "`", "shape [64]", "expected [128]"});
}

TEST(Weights, WrongDtype) {
  const std::string name = "model.layers.1.self_attn.o_norm.weight";
  expect_bind_error("kimi-linear-tiny",
                    [&](auto& ts) {
                      OwnedTensor* t = find_tensor(ts, name);
                      t->dtype = DType::I32;
                      t->bytes.assign(128 * 4, 0);
                    },
                    {"`" + name + "`", "dtype I32", "BF16, F16 or F32"});
}

TEST(Weights, ExtraTensor) {
  expect_bind_error(
      "kimi-linear-tiny",
      [&](auto& ts) {
        ts.push_back({"model.layers.0.self_attn.bogus.weight", DType::BF16, {2}, std::vector<uint8_t>(4, 0)});
      },
      {"1 extra tensor", "model.layers.0.self_attn.bogus.weight"});
}

TEST(Weights, ALogShapes) {
  // K3 pads A_log to more entries than heads: accepted, the first n_head are used.
  TempDir dir;
  test::copy_checkpoint("k3-tiny", dir.path(), [](auto& ts) {
    OwnedTensor* t = find_tensor(ts, "model.layers.0.self_attn.A_log");
    t->shape = {8};
    t->bytes.resize(32, 0);
  });
  const ModelConfig cfg = ModelConfig::load(dir.path());
  const WeightFiles ck = WeightFiles::open(dir.path());
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  EXPECT_EQ(w.layers[0].kda->a_log.shape, Shape{8});
  // Fewer entries than heads is an error.
  expect_bind_error("k3-tiny",
                    [](auto& ts) {
                      OwnedTensor* t = find_tensor(ts, "model.layers.2.self_attn.A_log");
                      t->shape = {1};
                      t->bytes.resize(4);
                    },
                    {"model.layers.2.self_attn.A_log", "shape [1]", "N >= 2"});
}

// Replaces the bf16 routed experts of the K3 fixture by MXFP4 packed/scale tensors (zero bytes).
void to_mxfp4(std::vector<OwnedTensor>& ts) {
  std::vector<OwnedTensor> out;
  for (OwnedTensor& t : ts) {
    const bool expert = t.name.find(".experts.") != std::string::npos && t.name.ends_with(".weight");
    if (!expert) {
      out.push_back(std::move(t));
      continue;
    }
    const std::string base = t.name.substr(0, t.name.size() - std::string(".weight").size());
    const int64_t o = t.shape[0], in = t.shape[1];
    if (in % 32 != 0) {  // w2 of the tiny model has in = 48: keep it dense (mixed is allowed)
      out.push_back(std::move(t));
      continue;
    }
    out.push_back(
        {base + ".weight_packed", DType::U8, {o, in / 2}, std::vector<uint8_t>(size_t(o * in / 2), 0)});
    out.push_back(
        {base + ".weight_scale", DType::U8, {o, in / 32}, std::vector<uint8_t>(size_t(o * in / 32), 127)});
  }
  ts = std::move(out);
}

TEST(Weights, Mxfp4Experts) {
  TempDir dir;
  test::copy_checkpoint("k3-tiny", dir.path(), to_mxfp4);
  const ModelConfig cfg = ModelConfig::load(dir.path());
  const WeightFiles ck = WeightFiles::open(dir.path());
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  const ExpertWeights& e = w.layers[2].moe->experts[3];
  ASSERT_TRUE(e.w1.is_mxfp4());
  EXPECT_EQ(e.w1.weight.dtype, DType::U8);
  EXPECT_EQ(e.w1.weight.shape, (Shape{48, 64}));
  EXPECT_EQ(e.w1.scale->shape, (Shape{48, 4}));
  EXPECT_EQ(e.w1.in, 128);
  EXPECT_FALSE(e.w2.is_mxfp4());

  expect_bind_error(
      "k3-tiny",
      [](auto& ts) {
        to_mxfp4(ts);
        std::erase_if(ts, [](auto& t) {
          return t.name == "model.layers.1.block_sparse_moe.experts.0.w3.weight_scale";
        });
      },
      {"missing tensor `model.layers.1.block_sparse_moe.experts.0.w3.weight_scale`", "[48, 4]"});
  expect_bind_error("k3-tiny",
                    [](auto& ts) {
                      to_mxfp4(ts);
                      OwnedTensor* t =
                          find_tensor(ts, "model.layers.1.block_sparse_moe.experts.0.w1.weight_packed");
                      t->dtype = DType::I8;
                    },
                    {"weight_packed", "dtype I8", "expected U8"});
}

// The kimi_k3 multimodal wrapper: text tensors under `language_model.`, a vision tower ignored.
TEST(Weights, KimiK3WrapperLoadsTextModel) {
  TempDir dir;
  std::vector<OwnedTensor> ts = test::load_all(golden_dir("k3-tiny") + "/model.safetensors");
  for (OwnedTensor& t : ts) t.name = "language_model." + t.name;
  ts.push_back(
      {"vision_tower.encoder.blocks.0.attn.qkv.weight", DType::BF16, {6, 2}, std::vector<uint8_t>(24, 0)});
  ts.push_back({"mm_projector.proj.0.weight", DType::BF16, {2, 2}, std::vector<uint8_t>(8, 0)});
  test::save_all(dir.file("model.safetensors"), ts);
  test::write_json(dir.file("config.json"),
                   {{"model_type", "kimi_k3"},
                    {"text_config", test::read_json(golden_dir("k3-tiny") + "/config.json")},
                    {"vision_config", {{"hidden_size", 1024}}}});
  const ModelConfig cfg = ModelConfig::load(dir.path());
  ASSERT_TRUE(cfg.multimodal_wrapper);
  const WeightFiles ck = WeightFiles::open(dir.path(), cfg.tensor_prefix());
  const ModelWeights w = ModelWeights::bind(cfg, ck);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("ignored 2 tensor(s)"), std::string::npos) << w.notes[0];
  EXPECT_NE(w.notes[0].find("vision"), std::string::npos);
  EXPECT_EQ(w.layers[4].mla->g_proj->name, "language_model.model.layers.4.self_attn.g_proj.weight");
  // Without the prefix the text tensors are all "extra" and nothing is found.
  const WeightFiles raw = WeightFiles::open(dir.path());
  expect_error([&] { ModelWeights::bind(cfg, raw); }, {"missing tensor `model.embed_tokens.weight`"});
}

}  // namespace
}  // namespace ds
