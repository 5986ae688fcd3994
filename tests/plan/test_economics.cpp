// Planner economics: KV bytes per family from their configs, the EP comm/compute ratio formula,
// KV throughput ordering, $ per million tokens.
#include <gtest/gtest.h>

#include "core/check.h"
#include "plan/economics.h"

namespace ds {
namespace {

TEST(ArchProfile, KvBytesPerTokenFollowTheFamily) {
  // Llama-3.1-70B: K and V of 8 heads x 128 over 80 layers, 1 byte each (fp8).
  EXPECT_DOUBLE_EQ(ArchProfile::load("llama-3.1-70b").kv_bytes_per_token(1), 2.0 * 8 * 128 * 80);
  // DeepSeek-V3: latent 512 + rope 64 over 61 layers.
  EXPECT_DOUBLE_EQ(ArchProfile::load("deepseek-v3").kv_bytes_per_token(1), 576.0 * 61);
  // DSA adds the indexer key (128 fp8 + one 4-byte scale) on every indexer layer.
  EXPECT_DOUBLE_EQ(ArchProfile::load("deepseek-v3.2-exp").kv_bytes_per_token(1), 576.0 * 61 + 132.0 * 61);
  const ArchProfile glm = ArchProfile::load("glm-5.2");
  EXPECT_EQ(glm.indexer_layers, 3 + 75 / 4);  // IndexShare: 3 leading + one in 4
  const ArchProfile k3 = ArchProfile::load("kimi-k3");
  EXPECT_EQ(k3.family, AttentionFamily::HybridKdaMla);
  EXPECT_GT(k3.state_bytes(), 0);
  EXPECT_THROW(ArchProfile::load("no-such-model"), Error);
}

TEST(Economics, EpRatioIsTheSeedsFormula) {
  const HardwareProfile b300 = HardwareProfile::load("b300");
  const ArchProfile k2 = ArchProfile::load("kimi-k2");
  const EpRatio r = ep_comm_compute_ratio(k2, b300, 8, 8);
  const double F = b300.fp8_flops * b300.gemm_efficiency, B = b300.nvlink_bw_bytes_s * b300.comm_efficiency;
  EXPECT_DOUBLE_EQ(r.ratio, 3.0 * F / (6.0 * 2048 * B) * (1 - 1.0 / 8));
  EXPECT_NEAR(r.ratio * 2048 / r.m_for_unity, 1.0, 1e-12);
  // Beyond the node the scale-out NIC carries the traffic; E = 1 sends nothing.
  EXPECT_GT(ep_comm_compute_ratio(k2, b300, 64, 8).ratio, r.ratio * 5);
  EXPECT_DOUBLE_EQ(ep_comm_compute_ratio(k2, b300, 1, 8).ratio, 0.0);
  // K3's MXFP4 experts run at the FP4 rate on B300.
  EXPECT_DOUBLE_EQ(ep_comm_compute_ratio(ArchProfile::load("kimi-k3"), b300, 8, 8).ffn_flops_s,
                   b300.fp4_flops * b300.gemm_efficiency);
  EXPECT_THROW(ep_comm_compute_ratio(ArchProfile::load("llama-3.1-70b"), b300, 8, 8), Error);
}

TEST(Economics, KvThroughputFallsWithLengthSlowestForSparseAttention) {
  const HardwareProfile h200 = HardwareProfile::load("h200");
  for (const char* name : {"llama-3.1-70b", "deepseek-v3", "kimi-k3", "glm-5.2"}) {
    const ArchProfile a = ArchProfile::load(name);
    const FamilyKvThroughput short_ = family_kv_throughput(a, h200, 8, 8192, 1);
    const FamilyKvThroughput long_ = family_kv_throughput(a, h200, 8, 262144, 1);
    EXPECT_GT(short_.gbit_s, long_.gbit_s) << name;
    EXPECT_GT(long_.prefill_s, short_.prefill_s) << name;
  }
  auto ratio = [&](const char* name) {
    const ArchProfile a = ArchProfile::load(name);
    return family_kv_throughput(a, h200, 8, 262144, 1).gbit_s /
           family_kv_throughput(a, h200, 8, 8192, 1).gbit_s;
  };
  EXPECT_GT(ratio("glm-5.2"), ratio("deepseek-v3"));  // top-2048 keys: prefill stays linear
}

TEST(Economics, TokenPricesSplitOneToFive) {
  // 8 GPUs for one hour at $6: $48 over 1M input + 0.2M output tokens.
  const TokenPrices p = token_prices(6.0, 8, 3600, 1000000, 200000);
  EXPECT_DOUBLE_EQ(p.usd_per_m_input, 48.0 / 2.0);
  EXPECT_DOUBLE_EQ(p.usd_per_m_output, 5 * p.usd_per_m_input);
  EXPECT_DOUBLE_EQ(token_prices(0, 8, 3600, 1, 1).usd_per_m_input, 0.0);
}

}  // namespace
}  // namespace ds
