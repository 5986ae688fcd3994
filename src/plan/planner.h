// Planner: the memory plan of one model on one node (`deltaserve plan`): weights per GPU,
// activation and runtime reserves, the cache budget left for MLA KV and KDA states, the KV token
// budget, the cost of one KDA checkpoint in KV-token equivalents, and KV throughput (KV bytes
// produced / prefill time) at several prompt lengths. Invariants: derived from the profiles and
// the documented rule below only; a model that does not fit yields fits = false, budget 0.
//
// Rule (per GPU, vLLM-style): cache = hbm x gpu_memory_utilization - weights - activations
//   - runtime_reserve, where activations = max_batched_tokens x activation_bytes_per_token()
//   (the largest set of live bf16 buffers of one layer in a profiling forward pass) and
//   runtime_reserve comes from the hardware profile (CUDA graphs, NCCL/cuBLAS workspaces).
// "KV" means the MLA latent cache only (latent_dim x dtype x n_mla per token, replicated on
// every TP rank), as vLLM reports it; KDA states and checkpoints share the cache bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/hardware_profile.h"
#include "plan/model_profile.h"
#include "plan/vllm_geometry.h"

namespace ds {

// vLLM >= 0.19 profiles the CUDA-graph pool into the KV budget by default
// (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). Its size, as a fraction of device memory, measured
// for Kimi K2.5 at TP8 on B300: the vLLM log asks to "increase --gpu-memory-utilization from 0.9000
// to 0.9046 to maintain the same effective KV cache size" (MoonshotAI/Kimi-K2.5#34).
inline constexpr double kVllmCudaGraphFraction = 0.0046;

struct PlanOptions {
  int gpus = 8;                          // GPUs in the node
  int tp = 8;                            // tensor-parallel size; gpus / tp data-parallel replicas
  int dcp = 1;                           // decode context parallel: the MLA KV split over dcp ranks
  int kv_dtype_bytes = 1;                // 1 = fp8, 2 = bf16 MLA latent cache
  double gpu_memory_utilization = 0.90;  // vLLM default (and the InferenceX K3 B300 recipe)
  int64_t max_batched_tokens = 8192;     // vLLM API-server default: profiling pass and prefill chunk
  std::vector<int64_t> throughput_prompt_tokens = {8192, 32768, 131072, 262144};
  int64_t max_model_len = 1 << 20;  // for vLLM's reported token count
  double vllm_cuda_graph_fraction = kVllmCudaGraphFraction;
};

// The budget vLLM itself reports for this deployment: the planner's cache bytes minus the CUDA-graph
// pool it profiles, in whole blocks of its hybrid geometry, reported as max_concurrency x
// max_model_len. Each step is a named term (docs/cost_model.md "Memory geometry").
struct VllmBudget {
  VllmGeometry geometry;
  double cuda_graph_bytes = 0;  // per GPU
  double cache_bytes = 0;       // per GPU, after the CUDA-graph pool
  int64_t num_blocks = 0;
  int64_t raw_tokens = 0;       // num_blocks x block_tokens (every block holding MLA KV)
  int64_t reported_tokens = 0;  // vLLM's "GPU KV cache size: N tokens"
};

struct KvThroughputPoint {
  int64_t prompt_tokens = 0;
  double prefill_s = 0;       // one prompt alone on one replica, chunked by max_batched_tokens
  double kv_bytes = 0;        // MLA latent for the prompt + one KDA state (one logical copy)
  double kv_bytes_per_s = 0;  // kv_bytes / prefill_s
};

struct MemoryPlan {
  std::string model, hardware;
  int gpus = 0, tp = 0, dcp = 1, replicas = 0, kv_dtype_bytes = 0;
  int64_t total_params = 0, active_params_per_token = 0;
  double weight_bytes_total = 0;
  // Per GPU.
  double hbm_bytes = 0;
  double usable_bytes = 0;  // hbm x gpu_memory_utilization
  double weight_bytes = 0;
  double activation_bytes = 0;
  double runtime_reserve_bytes = 0;
  double cache_bytes = 0;  // left for MLA KV + KDA states; 0 when it does not fit
  bool fits = false;
  int64_t kv_bytes_per_token = 0;  // per GPU (replicated latent; 1/dcp of it under DCP)
  int64_t kv_token_budget_per_replica = 0;
  int64_t kv_token_budget = 0;         // all replicas of the node
  int64_t kda_state_bytes = 0;         // one sequence, whole model
  double kda_state_bytes_per_gpu = 0;  // its TP shard
  double checkpoint_tokens_equiv = 0;  // kda_state_bytes_per_gpu / kv_bytes_per_token
  double host_dram_bytes = 0;          // per GPU share (a second cache tier)
  std::vector<KvThroughputPoint> kv_throughput;
  VllmBudget vllm;  // only for hybrid KDA + MLA models that fit (layers_per_group > 0)
};

// Live activation bytes per batched token in the largest layer (see the rule above).
double activation_bytes_per_token(const ModelProfile& model, int tp);

MemoryPlan make_plan(const ModelProfile& model, const HardwareProfile& hw, const PlanOptions& opt);
std::string plan_json(const MemoryPlan& plan);   // one JSON document (includes kv_token_budget)
std::string plan_table(const MemoryPlan& plan);  // for humans

}  // namespace ds
