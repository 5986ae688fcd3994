// CostModel: roofline time of one engine step for a model profile on a hardware profile
// (weights streamed, MLA KV read, KDA state read/write, prefill FLOPs incl. the KDA chunk cost,
// MoE active experts, host<->device transfers), with efficiency factors from the hardware
// profile. Pure function of its inputs; used by the simulated executor and by `deltaserve plan`.
#pragma once

#include <cstdint>
#include <vector>

namespace ds {

// Work of one sequence in one step. A prefill chunk has n_new_tokens > 1; a decode step has 1.
struct SeqWork {
  int64_t n_new_tokens = 0;       // tokens computed this step
  int64_t n_context_tokens = 0;   // tokens already in the MLA KV before this step (attention reads them)
  int64_t n_checkpoints = 0;      // KDA checkpoints written this step (state copies)
  int64_t n_restores = 0;         // KDA checkpoints copied into the live slot this step
  int64_t host_load_bytes = 0;    // bytes moved host->device before this step (lower-tier hit)
};

struct StepWork {
  std::vector<SeqWork> seqs;
};

// Time in seconds, split by where it goes (all per step, whole node).
struct StepCost {
  double total_s = 0;
  double weights_s = 0;     // streaming weights (dense + active experts)
  double attn_s = 0;        // MLA KV reads + attention FLOPs
  double kda_s = 0;         // KDA state traffic + chunk FLOPs
  double gemm_s = 0;        // projection / expert GEMM FLOPs
  double transfer_s = 0;    // host<->device
  double flops = 0;         // total FLOPs
  double bytes = 0;         // total HBM bytes
};

}  // namespace ds
