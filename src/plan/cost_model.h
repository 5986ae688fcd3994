// CostModel: roofline time of one engine step for a model profile on a hardware profile
// (weights streamed, MLA KV read, KDA state read/write, prefill FLOPs incl. the KDA chunk cost,
// MoE active experts, host<->device transfers, TP allreduces, decode-context-parallel exchanges,
// a fixed per-step host overhead), with efficiency factors from the hardware profile and optional
// speculative decoding. Pure function of its inputs; used by the simulated executor and by
// `deltaserve plan`. Invariants: every part is max(compute, memory) of its own work, parts add up
// to total_s (without speculative decoding; with it, decode work is amortised over the accepted
// tokens, see SpecDecode), and more work never costs less time. O(#sequences) per call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/hardware_profile.h"
#include "plan/model_profile.h"

namespace ds {

// Work of one sequence in one step. A prefill chunk has n_new_tokens > 1; a decode step has 1.
struct SeqWork {
  int64_t n_new_tokens = 0;      // tokens computed this step
  int64_t n_context_tokens = 0;  // tokens already in the MLA KV before this step (attention reads them)
  int64_t n_checkpoints = 0;     // KDA checkpoints written this step (state copies)
  int64_t n_restores = 0;        // KDA checkpoints copied into the live slot this step
  int64_t host_load_bytes = 0;   // bytes each GPU receives host->device before this step (lower-tier hit)
};

struct StepWork {
  std::vector<SeqWork> seqs;
};

// Time in seconds, split by where it goes (all per step). The GPUs of a TP group work in
// lockstep, so times are those of one GPU; flops and bytes are summed over the node's GPUs.
struct StepCost {
  double total_s = 0;       // max(weights_s, gemm_s) + attn_s + kda_s + checkpoint_s + comm_s + transfer_s
                            // + overhead_s
  double weights_s = 0;     // streaming weights (dense + distinct routed experts touched)
  double attn_s = 0;        // MLA KV reads + attention FLOPs
  double kda_s = 0;         // KDA state traffic + chunk FLOPs
  double gemm_s = 0;        // projection / expert GEMM FLOPs
  double transfer_s = 0;    // host<->device
  double checkpoint_s = 0;  // KDA checkpoint copies and restores (device-to-device)
  double comm_s = 0;        // TP allreduces and DCP exchanges (bandwidth + per-call latency)
  double overhead_s = 0;    // fixed host time per step (scheduling, launch, sampling)
  double flops = 0;         // total FLOPs
  double bytes = 0;         // total HBM bytes
};

// Adds every field of `c` to `sum` (for per-run breakdowns).
void accumulate(StepCost& sum, const StepCost& c);

// Speculative decoding (draft, then verify): each decode step of a sequence verifies
// draft_tokens + 1 positions (so the target's work is that of a (k+1)-token chunk) and commits
// acceptance_length tokens on average. The simulator produces one token per scheduler step, so a
// step's decode work is charged (1 + draft_cost_fraction) / acceptance_length of a verify step:
// the time per committed token. Prefill work in the same step is charged in full.
struct SpecDecode {
  int draft_tokens = 0;            // k tokens proposed per step; 0 = off
  double acceptance_length = 1;    // mean tokens committed per verify step, bonus token included: [1, k+1]
  double draft_cost_fraction = 0;  // drafter time as a fraction of the target's verify step
  bool enabled() const { return draft_tokens > 0; }
  void validate() const;  // throws ds::Error naming the field
};

struct CostOptions {
  int tp = 8;                   // tensor-parallel ranks one model replica is split over
  int dcp = 1;                  // decode context parallel: the MLA KV is split over dcp ranks of the TP group
  int kv_dtype_bytes = 1;       // MLA latent cache: 1 = fp8, 2 = bf16
  int kda_chunk_tokens = 64;    // C of the chunked KDA kernel (fla / FlashKDA default 64)
  int expert_compute_bits = 0;  // precision routed-expert GEMMs run at: 16, 8 or 4; 0 = the storage
                                // precision if the hardware has tensor cores for it (MXFP4 -> fp4)
  double step_overhead_s = -1;  // fixed host time per step; < 0 = the hardware profile's value
  SpecDecode spec{};
};

class CostModel {
 public:
  CostModel(const ModelProfile& model, const HardwareProfile& hw, CostOptions opt);

  StepCost step(const StepWork& work) const;

  // One sequence of `prompt_tokens` prefilled alone in chunks of `chunk_tokens` (chunked prefill).
  double prefill_time_s(int64_t prompt_tokens, int64_t chunk_tokens) const;
  // One decode step of `batch` sequences that each hold `context_tokens` tokens.
  double decode_step_time_s(int64_t batch, int64_t context_tokens) const;
  // Expected number of distinct routed experts one MoE layer touches for `n_tokens` tokens:
  // E * (1 - (1 - k/E)^n).
  double distinct_experts(int64_t n_tokens) const;

  const CostOptions& options() const { return opt_; }
  double state_bytes_per_gpu() const { return state_bytes_gpu_; }
  double kv_bytes_per_token() const { return kv_bytes_token_; }  // per GPU before DCP (replicated latent)
  double step_overhead_s() const { return overhead_s_; }
  int expert_compute_bits() const { return expert_bits_; }
  // Per-GPU matmul FLOPs per token outside the routed experts (replicated weights in full).
  double dense_flops_per_token_gpu() const { return dense_flops_token_; }

 private:
  StepCost raw_step(const StepWork& work, bool spec_expand) const;

  CostOptions opt_;
  // Per-GPU constants, computed once.
  double dense_bytes_gpu_ = 0;   // weights streamed every step (all but embedding / routed experts)
  double expert_bytes_gpu_ = 0;  // one routed expert's TP shard
  double n_moe_layers_ = 0, n_expert_ = 0, top_k_ = 0, n_layer_ = 0, n_mla_layers_ = 0;
  double dense_flops_token_ = 0;      // per GPU, non-routed matmuls (replicated ones in full)
  double routed_flops_token_ = 0;     // per GPU, routed experts
  double lm_head_flops_ = 0;          // per GPU per sampled token
  double kv_bytes_token_ = 0;         // per GPU without DCP
  double state_bytes_gpu_ = 0;        // one sequence's KDA state shard
  double allreduce_bytes_token_ = 0;  // per GPU link traffic per token, all layers
  double allreduce_calls_ = 0;        // per step
  double dcp_bytes_token_ = 0;        // per GPU DCP exchange traffic per decoded token, all MLA layers
  double dcp_calls_ = 0;              // per step with DCP
  double mla_key_decode_ = 0, mla_key_prefill_ = 0, mla_expand_ = 0;  // per GPU FLOPs
  double kda_token_decode_ = 0, kda_token_prefill_ = 0;               // per GPU FLOPs
  int expert_bits_ = 16;
  double overhead_s_ = 0;
  // Effective rates.
  double mem_bw_ = 0, gemm_peak_ = 0, expert_peak_ = 0, attn_peak_ = 0, kda_peak_ = 0;
  double link_bw_ = 0, host_bw_ = 0, comm_latency_s_ = 0;
};

}  // namespace ds
