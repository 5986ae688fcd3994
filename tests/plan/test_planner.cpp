// Memory planner: the K3 / 8xB300 budget reproduces the published 3.25M KV tokens (InferenceX K3/B300) from
// the config and hardware profile alone; other hardware and options behave as documented.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "plan/planner.h"

namespace ds {
namespace {

TEST(Planner, KimiK3OnEightB300MatchesTheSeedBudget) {
  const MemoryPlan p = make_plan(ModelProfile::load("kimi-k3"), HardwareProfile::load("b300"), PlanOptions{});
  // Seed (SemiAnalysis, 2026-08-03): "after weights, HBM holds 3.25M tokens of KV"; InferenceX
  // logs 3,249,215 tokens for TP8 + FP8 KV. Issue 4 asks for +-10%.
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(double(p.kv_token_budget) / 3'249'215.0, 1.0, 0.10) << p.kv_token_budget;
  EXPECT_EQ(p.kv_bytes_per_token, 13'824);
  EXPECT_EQ(p.replicas, 1);
  EXPECT_EQ(p.kv_token_budget, int64_t(p.cache_bytes / 13'824));
  // One checkpoint of all 69 KDA layers, TP-sharded, in KV-token equivalents.
  EXPECT_NEAR(p.checkpoint_tokens_equiv, double(p.kda_state_bytes) / 8 / 13'824, 1e-9);
  EXPECT_NEAR(p.checkpoint_tokens_equiv, 4064, 5);
  // Weights per GPU: "~188 GB/GPU" in the InferenceX recipe (1.5 TB / 8) plus replicated tensors.
  EXPECT_NEAR(p.weight_bytes / 1e9, 200, 12);
  ASSERT_EQ(p.kv_throughput.size(), 4u);  // 8k, 32k, 128k, 256k
  for (size_t i = 1; i < p.kv_throughput.size(); ++i)
    EXPECT_GT(p.kv_throughput[i].prefill_s, p.kv_throughput[i - 1].prefill_s);
}

TEST(Planner, JsonCarriesTheBudget) {
  const MemoryPlan p = make_plan(ModelProfile::load("kimi-k3"), HardwareProfile::load("b300"), PlanOptions{});
  const nlohmann::json j = nlohmann::json::parse(plan_json(p));
  EXPECT_EQ(j.at("kv_token_budget").get<int64_t>(), p.kv_token_budget);
  EXPECT_EQ(j.at("kv_dtype_bytes"), 1);
  EXPECT_EQ(j.at("kda_state_bytes").get<int64_t>(), p.kda_state_bytes);
  EXPECT_EQ(j.at("per_gpu").at("kda_state_bytes_per_gpu").get<double>(), p.kda_state_bytes_per_gpu);
  EXPECT_EQ(j.at("kv_throughput").size(), 4u);
  EXPECT_GT(j.at("kv_throughput_gbit_s").at("262144").get<double>(), 0);
  EXPECT_TRUE(j.at("fits").get<bool>());
  EXPECT_NE(plan_table(p).find("KV token budget"), std::string::npos);
}

TEST(Planner, KimiK3DoesNotFitOnEightB200) {
  // Seed: "it doesn't fit on a single B200 node. We had to use PP".
  const MemoryPlan p = make_plan(ModelProfile::load("kimi-k3"), HardwareProfile::load("b200"), PlanOptions{});
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.kv_token_budget, 0);
  EXPECT_EQ(p.cache_bytes, 0.0);
}

TEST(Planner, BudgetScalesWithKvDtypeAndReplicas) {
  const ModelProfile m = ModelProfile::load("kimi-linear-48b");
  const HardwareProfile hw = HardwareProfile::load("h200");
  PlanOptions opt;
  opt.gpus = 1;
  opt.tp = 1;
  opt.kv_dtype_bytes = 2;
  const MemoryPlan bf16 = make_plan(m, hw, opt);
  EXPECT_TRUE(bf16.fits);
  EXPECT_EQ(bf16.kv_bytes_per_token, 8'064);
  opt.kv_dtype_bytes = 1;
  const MemoryPlan fp8 = make_plan(m, hw, opt);
  EXPECT_EQ(fp8.kv_token_budget, int64_t(fp8.cache_bytes / 4'032));
  EXPECT_NEAR(double(fp8.kv_token_budget) / double(bf16.kv_token_budget), 2.0, 1e-5);
  opt.gpus = 4;  // 4 data-parallel replicas
  const MemoryPlan dp = make_plan(m, hw, opt);
  EXPECT_EQ(dp.kv_token_budget, 4 * fp8.kv_token_budget);
}

TEST(Planner, BadOptionsAreOneClearError) {
  const ModelProfile m = ModelProfile::load("kimi-k3");
  const HardwareProfile hw = HardwareProfile::load("b300");
  PlanOptions opt;
  opt.gpus = 6;
  try {
    make_plan(m, hw, opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan: 6 GPUs are not a multiple of the tensor-parallel size 8"),
              std::string::npos);
  }
  opt.gpus = 5;
  opt.tp = 5;
  EXPECT_THROW(make_plan(m, hw, opt), Error);  // 96 heads not divisible by 5
  opt = PlanOptions{};
  opt.gpu_memory_utilization = 1.5;
  EXPECT_THROW(make_plan(m, hw, opt), Error);
}

// vLLM's logged budget for the InferenceX K3 deployment (TP8, FP8 KV, gpu-memory-utilization 0.90,
// max-model-len 1,048,576): "GPU KV cache size: 3,249,215 tokens" (InferenceX perf-changelog,
// kimik3-fp4-b300-vllm-agentic). The planner's 3.40M minus the named vLLM terms lands within 1 %.
TEST(Planner, VllmGeometryExplainsTheLoggedBudget) {
  const MemoryPlan p = make_plan(ModelProfile::load("kimi-k3"), HardwareProfile::load("b300"), PlanOptions{});
  const VllmBudget& v = p.vllm;
  EXPECT_EQ(v.geometry.layers_per_group, 24);
  EXPECT_EQ(v.geometry.n_kda_groups, 3);  // 69 KDA layers in groups of 24, the last padded
  EXPECT_NEAR(v.cuda_graph_bytes / p.hbm_bytes, kVllmCudaGraphFraction, 1e-12);
  EXPECT_EQ(v.num_blocks, int64_t(v.cache_bytes / double(v.geometry.block_bytes)));
  EXPECT_LT(v.reported_tokens, v.raw_tokens);  // max_concurrency x max_model_len pays the KDA blocks
  EXPECT_NEAR(double(v.reported_tokens) / 3'249'215.0, 1.0, 0.01) << v.reported_tokens;
  const nlohmann::json j = nlohmann::json::parse(plan_json(p));
  EXPECT_EQ(j.at("vllm").at("reported_tokens").get<int64_t>(), v.reported_tokens);
}

// Public block sizes: Kimi-Linear bf16 with the Triton MLA backend (16-token kernel blocks): 1888 at
// TP1, 944 at TP2; Kimi K3 TP8 bf16 on B300: 768 (LMCache recipes kimi_linear.rst / kimi_k3.rst).
TEST(Planner, VllmBlockSizesMatchPublishedLogs) {
  const ModelProfile linear = ModelProfile::load("kimi-linear-48b");
  EXPECT_EQ(vllm_geometry(linear, {.tp = 1, .kv_dtype_bytes = 2, .block_align_tokens = 16}).block_tokens,
            1888);
  EXPECT_EQ(vllm_geometry(linear, {.tp = 2, .kv_dtype_bytes = 2, .block_align_tokens = 16}).block_tokens,
            944);
  const ModelProfile k3 = ModelProfile::load("kimi-k3");
  const VllmGeometry g = vllm_geometry(k3, {.tp = 8, .kv_dtype_bytes = 2});
  EXPECT_EQ(g.block_tokens, 768);
  EXPECT_EQ(g.checkpoint_blocks, 3);
  EXPECT_EQ(g.live_state_blocks, 6);  // (2 + 0 speculative) per KDA group
  EXPECT_EQ(vllm_geometry(k3, {.tp = 8, .spec_tokens = 2}).live_state_blocks, 12);
}

}  // namespace
}  // namespace ds
