// HardwareProfile: per-GPU capacities, peak rates and efficiency factors of one accelerator kind
// (H100/H200/B200/B300 bundled under data/profiles/hardware/), parsed from JSON. A node is N of
// these GPUs. Invariants: every number is finite and non-negative, capacities and bandwidths that
// the planner divides by are positive, efficiencies lie in (0, 1], and every number has a source.
#pragma once

#include <map>
#include <string>

#include "nlohmann/json_fwd.hpp"

namespace ds {

struct HardwareProfile {
  std::string name;         // "b300"
  std::string description;  // one line for tables

  double hbm_bytes = 0;             // per GPU, as the device reports it (what vLLM's utilisation multiplies)
  double hbm_bw_bytes_s = 0;        // per GPU HBM peak
  double bf16_flops = 0;            // dense tensor-core peak, FLOP/s per GPU
  double fp8_flops = 0;             // dense
  double fp4_flops = 0;             // dense; 0 = no FP4 tensor cores (fp4 work runs at the fp8 rate)
  double nvlink_bw_bytes_s = 0;     // per GPU, one direction
  double scaleout_bw_bytes_s = 0;   // per GPU scale-out NIC (InfiniBand / Ethernet), one direction; 0 = none
  double host_dram_bytes = 0;       // host DRAM per GPU share of the node
  double host_dram_bw_bytes_s = 0;  // host DRAM bandwidth per GPU share
  double host_link_bw_bytes_s = 0;  // host<->GPU link (PCIe / C2C) per GPU, one direction

  double gemm_efficiency = 1;        // fraction of peak FLOP/s reached by projection / expert GEMMs
  double attention_efficiency = 1;   // fraction of peak FLOP/s reached by MLA attention and KDA kernels
  double memory_efficiency = 1;      // fraction of HBM bandwidth reached by streaming kernels
  double comm_efficiency = 1;        // fraction of NVLink bandwidth reached by TP allreduces
  double host_link_efficiency = 1;   // fraction of host link bandwidth reached by host<->GPU copies
  double comm_latency_s = 0;         // fixed cost of one TP allreduce
  double runtime_reserve_bytes = 0;  // per GPU: CUDA graphs, NCCL / cuBLAS workspaces, allocator slack
  double step_overhead_s = 0;        // fixed host time per engine step (scheduling, launches, sampling)
  double gpu_hour_usd = 0;           // on-demand rental price of one GPU-hour; 0 = no sourced price

  std::map<std::string, std::string> sources;  // field name -> where the number comes from

  // Peak dense FLOP/s for a weight/activation width in bits (16 -> bf16, 8 -> fp8, 4 -> fp4).
  double peak_flops(int bits) const;

  // Parses and validates; throws ds::Error naming the source, key and value on bad input.
  static HardwareProfile from_json(const nlohmann::json& j, const std::string& source_name);
  // A bundled name ("b300") or a path to a JSON file.
  static HardwareProfile load(const std::string& name_or_path);
  void validate(const std::string& source_name) const;
};

// Resolves a bundled profile: `name_or_path` if it is an existing file (or folder), else
// <data>/profiles/<kind>/<name>[.json | /config.json] where <data> is $DS_DATA_DIR or the first
// `data/` folder found walking up from the executable and from the working directory.
// Throws ds::Error listing the bundled names when nothing matches.
std::string resolve_profile(const std::string& kind, const std::string& name_or_path);

// Reads and parses one JSON file; throws ds::Error naming the file on I/O or syntax errors.
nlohmann::json read_json_file(const std::string& path);

}  // namespace ds
