// Serving economics the planner prints (the seed's K3 architecture primer): KV throughput, the MoE
// expert-parallel communication-to-computation ratio, and $ per million tokens. Formulas, sources
// and tables: docs/cost_model.md "Economics".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/arch_profile.h"
#include "plan/hardware_profile.h"

namespace ds {

// KV throughput = KV cache bytes of one sequence / its prefill time, at a sequence length. Prefill
// is one sequence of seq_len tokens on `gpus` GPUs in one TP group, the same roofline for every
// family: matmuls at the FP8 peak x gemm_efficiency, attention at the BF16 peak x
// attention_efficiency, plus the TP allreduces (two bf16 hidden states per layer and token over
// NVLink x comm_efficiency), nothing overlapped, no chunking. `deltaserve plan` prices the planned
// Kimi model's own prefill with the calibrated CostModel instead (FP4 experts, chunks, overheads).
// The KV bytes include a hybrid's fixed KDA state.
struct FamilyKvThroughput {
  int64_t seq_len = 0;
  double kv_bytes = 0;   // whole sequence, whole model
  double prefill_s = 0;  // time to first token
  double gbit_s = 0;     // kv_bytes x 8 / prefill_s / 1e9
};
FamilyKvThroughput family_kv_throughput(const ArchProfile& arch, const HardwareProfile& hw, int gpus,
                                        int64_t seq_len, int kv_dtype_bytes);
inline const std::vector<int64_t> kKvThroughputLengths = {8192, 32768, 131072, 262144};

// T_comm / T_comp = (P x F) / (6 x m x B) x (1 - 1/E) for one MoE layer under expert parallelism E:
// per token, K experts compute 6 K d m FLOPs (three d x m GEMMs) while K d (1 - 1/E) activation
// elements leave the GPU at dispatch and come back at combine, P bytes per element in all
// (default 3: FP8 dispatch + BF16 combine, DeepEP's formats). F = per-GPU expert GEMM rate (the
// peak at the experts' compute precision x gemm_efficiency), B = per-GPU network bandwidth one
// direction x comm_efficiency (NVLink while E fits in the node, the scale-out NIC beyond).
struct EpRatio {
  int ep = 1;
  double p_bytes = 3;
  double ffn_flops_s = 0;  // F
  double net_bytes_s = 0;  // B
  int64_t m = 0;           // expert intermediate dim
  double ratio = 0;
  double m_for_unity = 0;  // the m that would make the ratio 1.0
};
EpRatio ep_comm_compute_ratio(const ArchProfile& arch, const HardwareProfile& hw, int ep, int gpus_per_node,
                              double p_bytes = 3);

// $ per million tokens from GPU time: cost = gpus x window_s / 3600 x gpu_hour_usd, split between
// input and output at the market's 1 : 5 price ratio (OpenRouter floor $3 / $15 per million):
// cost = p_in x input_tokens + 5 p_in x output_tokens.
struct TokenPrices {
  double usd_per_m_input = 0, usd_per_m_output = 0;
};
inline constexpr double kMarketFloorUsdPerMInput = 3.0, kMarketFloorUsdPerMOutput = 15.0;
TokenPrices token_prices(double gpu_hour_usd, int gpus, double window_s, int64_t input_tokens,
                         int64_t output_tokens);

// Tables over the bundled family configs (deltaserve plan --economics).
std::string ep_ratio_table(const std::vector<ArchProfile>& archs, const std::vector<HardwareProfile>& hws,
                           const std::vector<int>& eps, int gpus_per_node);
std::string kv_throughput_table(const std::vector<ArchProfile>& archs,
                                const std::vector<HardwareProfile>& hws, int gpus, int kv_dtype_bytes);

}  // namespace ds
