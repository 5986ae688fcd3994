#include "plan/economics.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"

namespace ds {

FamilyKvThroughput family_kv_throughput(const ArchProfile& arch, const HardwareProfile& hw, int gpus,
                                        int64_t seq_len, int kv_dtype_bytes) {
  DS_CHECK(gpus >= 1 && seq_len >= 1, "kv throughput: need gpus >= 1 and seq_len >= 1, got {} / {}", gpus,
           seq_len);
  FamilyKvThroughput p;
  p.seq_len = seq_len;
  p.kv_bytes = arch.kv_bytes_per_token(kv_dtype_bytes) * double(seq_len) + double(arch.state_bytes());
  const double linear = arch.linear_flops_per_token() * double(seq_len);
  const double attn = arch.attention_flops(seq_len);
  // TP: two bf16 allreduces of the hidden state per layer; a ring moves 2 (tp - 1) / tp of each.
  const double comm_bytes = 2.0 * double(arch.layers) * double(arch.hidden) * 2.0 * double(seq_len) * 2.0 *
                            double(gpus - 1) / double(gpus);
  p.prefill_s = linear / (double(gpus) * hw.peak_flops(8) * hw.gemm_efficiency) +
                attn / (double(gpus) * hw.peak_flops(16) * hw.attention_efficiency) +
                (gpus > 1 ? comm_bytes / (hw.nvlink_bw_bytes_s * hw.comm_efficiency) : 0.0);
  p.gbit_s = p.kv_bytes * 8 / p.prefill_s / 1e9;
  return p;
}

EpRatio ep_comm_compute_ratio(const ArchProfile& arch, const HardwareProfile& hw, int ep, int gpus_per_node,
                              double p_bytes) {
  DS_CHECK(ep >= 1 && gpus_per_node >= 1, "ep ratio: need --ep >= 1, got {}", ep);
  DS_CHECK(arch.expert_intermediate() > 0, "ep ratio: {} has no routed experts", arch.name);
  EpRatio r;
  r.ep = ep;
  r.p_bytes = p_bytes;
  r.m = arch.expert_intermediate();
  // Experts stored at <= 4.25 bits (MXFP4) run on FP4 tensor cores where the GPU has them.
  const bool fp4 = arch.kimi && arch.kimi->weight(WeightKind::RoutedExpert).bits <= 4.5;
  r.ffn_flops_s = hw.peak_flops(fp4 ? 4 : 8) * hw.gemm_efficiency;
  const double link = ep <= gpus_per_node ? hw.nvlink_bw_bytes_s : hw.scaleout_bw_bytes_s;
  r.net_bytes_s = link * hw.comm_efficiency;
  DS_CHECK(r.net_bytes_s > 0, "ep ratio: {} has no {} bandwidth", hw.name,
           ep <= gpus_per_node ? "NVLink" : "scale-out");
  const double spread = 1.0 - 1.0 / double(ep);
  r.ratio = p_bytes * r.ffn_flops_s / (6.0 * double(r.m) * r.net_bytes_s) * spread;
  r.m_for_unity = p_bytes * r.ffn_flops_s / (6.0 * r.net_bytes_s) * spread;
  return r;
}

TokenPrices token_prices(double gpu_hour_usd, int gpus, double window_s, int64_t input_tokens,
                         int64_t output_tokens) {
  TokenPrices t;
  const double weighted = double(input_tokens) + 5.0 * double(output_tokens);
  if (gpu_hour_usd <= 0 || window_s <= 0 || weighted <= 0) return t;
  const double cost = gpu_hour_usd * double(gpus) * window_s / 3600.0;
  t.usd_per_m_input = cost / weighted * 1e6;
  t.usd_per_m_output = 5.0 * t.usd_per_m_input;
  return t;
}

std::string ep_ratio_table(const std::vector<ArchProfile>& archs, const std::vector<HardwareProfile>& hws,
                           const std::vector<int>& eps, int gpus_per_node) {
  std::string out = fmt::format("{:<20} {:>6} {:>6}", "model", "m", "top-k");
  for (const HardwareProfile& hw : hws)
    for (int e : eps) out += fmt::format(" {:>15}", fmt::format("{} E={}", hw.name, e));
  out += "\n";
  for (const ArchProfile& a : archs) {
    if (a.expert_intermediate() <= 0) continue;
    out += fmt::format("{:<20} {:>6} {:>6}", a.name, a.expert_intermediate(), a.routed_top_k());
    for (const HardwareProfile& hw : hws)
      for (int e : eps) {
        const EpRatio r = ep_comm_compute_ratio(a, hw, e, gpus_per_node);
        out += fmt::format(" {:>15}", fmt::format("{:.2f} (m1={:.0f})", r.ratio, r.m_for_unity));
      }
    out += "\n";
  }
  return out;
}

std::string kv_throughput_table(const std::vector<ArchProfile>& archs,
                                const std::vector<HardwareProfile>& hws, int gpus, int kv_dtype_bytes) {
  std::string out = fmt::format("{:<20} {:<8} {:>10}", "model", "family", "KV B/tok");
  for (const HardwareProfile& hw : hws)
    for (int64_t L : kKvThroughputLengths)
      out += fmt::format(" {:>11}", fmt::format("{} {}k", hw.name, L / 1024));
  out += "\n";
  for (const ArchProfile& a : archs) {
    out += fmt::format("{:<20} {:<8} {:>10.0f}", a.name, to_string(a.family),
                       a.kv_bytes_per_token(kv_dtype_bytes));
    for (const HardwareProfile& hw : hws)
      for (int64_t L : kKvThroughputLengths)
        out += fmt::format(" {:>11.1f}", family_kv_throughput(a, hw, gpus, L, kv_dtype_bytes).gbit_s);
    out += "\n";
  }
  return out;
}

}  // namespace ds
