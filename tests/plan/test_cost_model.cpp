// Roofline cost model: monotonic in work, decode at batch 1 is weight streaming, each part
// charges exactly its documented bytes / FLOPs.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "plan/cost_model.h"

namespace ds {
namespace {

struct Fixture {
  ModelProfile model;
  HardwareProfile hw;
};

const Fixture& k3() {
  static const Fixture f{ModelProfile::load("kimi-k3"), HardwareProfile::load("b300")};
  return f;
}
const Fixture& kimi_linear() {
  static const Fixture f{ModelProfile::load("kimi-linear-48b"), HardwareProfile::load("h200")};
  return f;
}

StepWork one(int64_t n_new, int64_t ctx) {
  return StepWork{{SeqWork{n_new, ctx, 0, 0, 0}}};
}

TEST(CostModel, EmptyStepCostsNothing) {
  const CostModel cm(k3().model, k3().hw, CostOptions{});
  const StepCost c = cm.step(StepWork{});
  EXPECT_EQ(c.total_s, 0.0);
  EXPECT_EQ(c.bytes, 0.0);
}

TEST(CostModel, MoreWorkNeverCostsLess) {
  for (const Fixture* f : {&k3(), &kimi_linear()}) {
    const CostModel cm(f->model, f->hw, CostOptions{.tp = 8, .kv_dtype_bytes = 1});
    double prev = 0;
    for (int64_t n : {1, 2, 16, 256, 1024, 4096, 8192, 16384}) {  // more new tokens
      const double t = cm.step(one(n, 1000)).total_s;
      EXPECT_GT(t, prev) << f->model.name << " n=" << n;
      prev = t;
    }
    prev = 0;
    for (int64_t ctx : {0, 1000, 32768, 131072, 1 << 20}) {  // longer context
      const double t = cm.step(one(1, ctx)).total_s;
      EXPECT_GT(t, prev) << f->model.name << " ctx=" << ctx;
      prev = t;
    }
    prev = 0;
    for (int64_t batch : {1, 2, 8, 64, 256}) {  // more sequences
      const double t = cm.decode_step_time_s(batch, 32768);
      EXPECT_GT(t, prev) << f->model.name << " batch=" << batch;
      prev = t;
    }
    EXPECT_GT(cm.prefill_time_s(131072, 8192), cm.prefill_time_s(32768, 8192));
  }
}

TEST(CostModel, DecodeAtBatchOneIsWeightStreaming) {
  const Fixture& f = kimi_linear();
  const CostModel cm(f.model, f.hw, CostOptions{.tp = 1, .kv_dtype_bytes = 2});
  const StepCost c = cm.step(one(1, 0));
  const ModelProfile& m = f.model;
  const double active_bytes =
      m.dense_bytes_per_gpu(1) + m.n_moe_layers() * m.config.moe.n_expert_per_token * m.expert_bytes();
  const double expect = active_bytes / (f.hw.hbm_bw_bytes_s * f.hw.memory_efficiency);
  EXPECT_NEAR(c.weights_s / expect, 1.0, 1e-12);
  EXPECT_GT(c.weights_s, c.gemm_s);            // memory bound
  EXPECT_NEAR(c.total_s / expect, 1.0, 0.03);  // KDA state + tiny KV add < 3%
  EXPECT_EQ(c.comm_s, 0.0);                    // TP 1: no allreduce
  // ~3B active parameters in bf16: ~6 GB streamed per token, ~1.25 ms at H200's 4.8 TB/s.
  EXPECT_NEAR(active_bytes / 1e9, 6.2, 0.3);
}

TEST(CostModel, DistinctExpertsFollowTheCoverageFormula) {
  const CostModel cm(k3().model, k3().hw, CostOptions{});
  EXPECT_NEAR(cm.distinct_experts(1), 16.0, 1e-9);
  EXPECT_NEAR(cm.distinct_experts(10), 896.0 * (1 - std::pow(1 - 16.0 / 896, 10)), 1e-9);
  EXPECT_NEAR(cm.distinct_experts(100000), 896.0, 1e-6);
  EXPECT_EQ(cm.distinct_experts(0), 0.0);
}

TEST(CostModel, CheckpointsRestoresAndHostLoadsChargeTheirBytes) {
  const Fixture& f = k3();
  const CostModel cm(f.model, f.hw, CostOptions{.tp = 8, .kv_dtype_bytes = 1});
  StepWork w{{SeqWork{0, 0, 2, 1, 0}}};
  const double state_gpu = double(f.model.kda_state_bytes()) / 8;
  const double bw = f.hw.hbm_bw_bytes_s * f.hw.memory_efficiency;
  EXPECT_NEAR(cm.step(w).checkpoint_s, 3 * 2 * state_gpu / bw, 1e-15);
  w = StepWork{{SeqWork{0, 0, 0, 0, 1'000'000'000}}};
  EXPECT_NEAR(cm.step(w).transfer_s, 1e9 / (f.hw.host_link_bw_bytes_s * f.hw.host_link_efficiency), 1e-12);
  EXPECT_NEAR(cm.step(w).total_s, cm.step(w).transfer_s + cm.step(w).overhead_s, 1e-15);
}

TEST(CostModel, PrefillChargesKdaChunksAndAttention) {
  const Fixture& f = k3();
  const CostModel cm(f.model, f.hw, CostOptions{.tp = 8, .kv_dtype_bytes = 1});
  const StepCost c = cm.step(one(8192, 0));
  const double kda_flops_gpu = f.model.kda_flops(8192, 64) / 8;
  EXPECT_GE(c.kda_s, kda_flops_gpu / (f.hw.bf16_flops * f.hw.attention_efficiency) * (1 - 1e-12));
  // Attention of a fresh 8k chunk is compute bound: exactly the profile's FLOPs at the fp8 peak.
  const double attn_flops_gpu = f.model.mla_attention_flops(8192, 0) / 8;
  const double attn_bytes_gpu = 8192.0 * 13'824;
  const double attn_peak = f.hw.fp8_flops * f.hw.attention_efficiency;
  ASSERT_GT(attn_flops_gpu / attn_peak, attn_bytes_gpu / (f.hw.hbm_bw_bytes_s * f.hw.memory_efficiency));
  EXPECT_NEAR(c.attn_s / (attn_flops_gpu / attn_peak), 1.0, 1e-12);
  // Decode reads the whole context: memory bound at 128k.
  const StepCost d = cm.step(one(1, 131072));
  EXPECT_NEAR(d.attn_s / (131073.0 * 13'824 / (f.hw.hbm_bw_bytes_s * f.hw.memory_efficiency)), 1.0, 1e-12);
  EXPECT_GT(c.gemm_s, c.weights_s);                   // a large prefill chunk is compute bound
  EXPECT_GT(c.comm_s, 2 * 93 * f.hw.comm_latency_s);  // TP 8: latency + bandwidth
  EXPECT_NEAR(c.total_s,
              std::max(c.weights_s, c.gemm_s) + c.attn_s + c.kda_s + c.checkpoint_s + c.comm_s +
                  c.transfer_s + c.overhead_s,
              1e-15);
}

TEST(CostModel, NegativeWorkIsAnError) {
  const CostModel cm(k3().model, k3().hw, CostOptions{});
  EXPECT_THROW(cm.step(one(-1, 0)), Error);
  EXPECT_THROW(CostModel(k3().model, k3().hw, CostOptions{.tp = 0}), Error);
}

TEST(CostModel, ReplicatedWeightsCostFullFlopsOnEveryRank) {
  const Fixture& f = k3();
  const CostModel cm(f.model, f.hw, CostOptions{.tp = 8});
  double expect = 0, sharded_only = 0;
  for (int k = 0; k < kWeightKinds; ++k) {
    const auto kind = WeightKind(k);
    if (kind == WeightKind::Embedding || kind == WeightKind::RoutedExpert || kind == WeightKind::LmHead)
      continue;
    const WeightGroup& g = f.model.weight(kind);
    expect += 2.0 * (double(g.params - g.replicated_params) / 8 + double(g.replicated_params));
    sharded_only += 2.0 * double(g.params) / 8;
  }
  EXPECT_NEAR(cm.dense_flops_per_token_gpu() / expect, 1.0, 1e-12);
  // K3 replicates its LatentMoE projections and MLA/KDA down-projections: a visible difference.
  EXPECT_GT(cm.dense_flops_per_token_gpu(), 1.2 * sharded_only);
}

TEST(CostModel, Mxfp4ExpertsRunAtTheFp4PeakWhereTheGpuHasOne) {
  EXPECT_EQ(CostModel(k3().model, k3().hw, CostOptions{}).expert_compute_bits(), 4);  // B300: FP4 cores
  const HardwareProfile h200 = HardwareProfile::load("h200");
  ASSERT_EQ(h200.fp4_flops, 0.0);
  EXPECT_EQ(CostModel(k3().model, h200, CostOptions{}).expert_compute_bits(), 8);
  EXPECT_EQ(CostModel(kimi_linear().model, kimi_linear().hw, CostOptions{}).expert_compute_bits(), 16);
  EXPECT_EQ(CostModel(k3().model, k3().hw, CostOptions{.expert_compute_bits = 16}).expert_compute_bits(), 16);
  // A prefill chunk's routed GEMMs get cheaper at 4 bits than at 16.
  const double t4 = CostModel(k3().model, k3().hw, CostOptions{}).step(one(8192, 0)).gemm_s;
  const double t16 =
      CostModel(k3().model, k3().hw, CostOptions{.expert_compute_bits = 16}).step(one(8192, 0)).gemm_s;
  EXPECT_LT(t4, t16);
}

TEST(CostModel, StepOverheadIsChargedOncePerStep) {
  const Fixture& f = k3();
  const CostModel with(f.model, f.hw, CostOptions{.step_overhead_s = 0.003});
  const CostModel without(f.model, f.hw, CostOptions{.step_overhead_s = 0});
  StepWork w{{SeqWork{1, 1000, 0, 0, 0}, SeqWork{1, 2000, 0, 0, 0}}};
  EXPECT_NEAR(with.step(w).total_s - without.step(w).total_s, 0.003, 1e-12);
  EXPECT_EQ(with.step(w).overhead_s, 0.003);
  EXPECT_EQ(with.step(StepWork{}).total_s, 0.0);
  EXPECT_EQ(CostModel(f.model, f.hw, CostOptions{}).step_overhead_s(), f.hw.step_overhead_s);
}

TEST(CostModel, DcpSplitsDecodeKvReadsAndAddsExchanges) {
  const Fixture& f = k3();
  const CostModel tp(f.model, f.hw, CostOptions{.tp = 8, .dcp = 1});
  const CostModel dcp(f.model, f.hw, CostOptions{.tp = 8, .dcp = 8});
  StepWork w;
  w.seqs.assign(64, SeqWork{1, 131072, 0, 0, 0});
  const StepCost a = tp.step(w), b = dcp.step(w);
  EXPECT_NEAR(b.attn_s / a.attn_s, 1.0 / 8, 0.02);  // memory bound at 128k context
  EXPECT_GT(b.comm_s, a.comm_s);
  EXPECT_LT(b.total_s, a.total_s);
  EXPECT_THROW(CostModel(f.model, f.hw, CostOptions{.tp = 8, .dcp = 3}), Error);
}

TEST(CostModel, SpeculativeDecodingAmortisesVerifyStepsOverAcceptedTokens) {
  const Fixture& f = k3();
  auto with = [&](double accept, double draft_cost) {
    return CostModel(
        f.model, f.hw,
        CostOptions{
            .step_overhead_s = 0,
            .spec = {.draft_tokens = 3, .acceptance_length = accept, .draft_cost_fraction = draft_cost}});
  };
  const CostModel plain(f.model, f.hw, CostOptions{.step_overhead_s = 0});
  StepWork decode;
  decode.seqs.assign(8, SeqWork{1, 20000, 0, 0, 0});
  // A decode-only step is one verify step of 4 tokens per sequence, divided by the tokens it commits.
  const double a = with(2.5, 0.2).step(decode).total_s, b = with(1.25, 0.0).step(decode).total_s;
  EXPECT_NEAR(a / b, (1.2 / 2.5) / (1.0 / 1.25), 1e-9);
  EXPECT_GT(with(1.0, 0.0).step(decode).total_s, plain.step(decode).total_s);  // verifying 4 costs more
  EXPECT_LT(a, plain.step(decode).total_s);  // but committing 2.5 of them pays off
  // Prefill work in the same step is charged in full; only the decodes' marginal work is amortised.
  StepWork mixed = decode;
  mixed.seqs.push_back(SeqWork{4096, 0, 0, 0, 0});
  StepWork prefill_only{{SeqWork{4096, 0, 0, 0, 0}}};
  EXPECT_GT(with(2.5, 0.2).step(mixed).total_s, plain.step(prefill_only).total_s);
  EXPECT_THROW(CostModel(f.model, f.hw, CostOptions{.spec = {.draft_tokens = 3, .acceptance_length = 5}}),
               Error);
}

}  // namespace
}  // namespace ds
