// Replay setup: turns user-level choices (model, hardware, GPUs, cache variants, concurrency list)
// into the per-run ReplayConfigs of a sweep, using the memory planner for the device budget and
// the model profile for cache sizes. One simulated node = one TP group of `gpus` GPUs; cache
// sizes are per GPU (the MLA latent is replicated on every rank, KDA states are sharded).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plan/cost_model.h"
#include "plan/hardware_profile.h"
#include "plan/model_profile.h"
#include "plan/planner.h"
#include "replay/replay.h"

namespace ds {

struct CacheVariant {
  std::string label;  // column name in reports
  std::string retention = "interval:32768";
  std::string eviction = "leaf-lru";
  std::vector<std::string> tiers = {"hbm"};  // "hbm" then optionally "dram"
  // "deltaserve" (this engine's cache), "vllm" (vLLM's hybrid allocator, emulated: one block pool
  // in vLLM's geometry and budget, its LRU free queue; retention "interval:N" sets vLLM's retention
  // interval, anything else its default 0; eviction is vLLM's own) or "sglang" (SGLang's Mamba radix
  // cache, emulated: the device budget split into a KV pool and a state pool by
  // ReplaySetup::sglang_mamba_ratio; retention and eviction are SGLang's own; no host tier).
  std::string cache_model = "deltaserve";
};

inline constexpr double kMaxReplayDurationS = 1e6;  // ~11.6 virtual days: a bound on a run's work

struct ReplaySetup {
  std::string model = "kimi-k3";     // profile name or config.json path
  std::string hardware = "b300";     // profile name or JSON path
  int gpus = 8;                      // one TP group
  int dcp = 1;                       // decode context parallel size (divides gpus)
  int kv_dtype_bytes = 1;            // fp8 MLA latent cache
  double routed_expert_bits = 0;     // 0 = from the model config (MXFP4 4.25); 4.5 = NVFP4
  int expert_compute_bits = 0;       // 0 = the storage precision where the GPU has it (CostOptions)
  double step_overhead_s = -1;       // < 0 = the hardware profile's value
  SpecDecode spec{};                 // speculative decoding (off by default)
  bool mixed_batches = true;         // scheduler: mixed prefill+decode steps (vLLM) or prefill first (SGLang)
  bool reserve_full_prompt = false;  // scheduler: admission reserves the whole prompt (vLLM >= 0.19)
  // "default": closed loop with a warm-up request per lane (25-75 % into its session), think times
  // capped at 10 s; "bench": every lane starts at t = 0, no warm-up, each request once
  // (sglang.bench_serving); "agentx": the InferenceX AgentX schedule (agentx_harness.h: sub-agent
  // branches, snapshot + cache warm-up, profiling window, cool-down); "" = bench for fixed-length
  // traces, default otherwise.
  std::string harness;
  AgentxOptions agentx;     // harness "agentx"
  double max_think_s = 10;  // harness "default": cap on each think time (AgentX's idle-gap cap)
  std::vector<int> concurrency = {1, 2, 4, 8, 16, 24, 32};
  std::vector<CacheVariant> variants;  // empty = default_variants()
  int64_t kv_budget_tokens = 0;        // device tier in MLA-KV tokens; 0 = the planner's budget
  double host_cache_fraction = 0.5;    // share of the per-GPU host DRAM given to the dram tier
  double host_bytes = 0;               // dram tier per GPU, bytes; > 0 overrides host_cache_fraction
  // cache_model "sglang": state pool / KV pool bytes (SGLang --mamba-full-memory-ratio, default 0.9:
  // the state pool gets ratio / (1 + ratio) of the budget) and the decode tracking interval.
  double sglang_mamba_ratio = 0.9;
  int64_t sglang_track_interval = 256;
  bool live_output = false;  // decoded tokens reappear in the next prompt (ReplayConfig::live_output)
  double gpu_hour_usd = -1;  // $ per GPU-hour for the cost columns; < 0 = the hardware profile's price
  uint64_t seed = 1;
  double duration_s = 600;         // virtual seconds per run
  int64_t max_step_tokens = 8192;  // scheduler token budget per step
  int max_running = 256;
};

// hbm (interval:32768), hbm+dram (same policy, DRAM second tier), semantic (Marconi-style, hbm).
std::vector<CacheVariant> default_variants();

struct PreparedSweep {
  ModelProfile model;
  HardwareProfile hardware;
  MemoryPlan plan;
  std::unique_ptr<CostModel> cost;
  std::vector<ReplayConfig> configs;  // variant-major, then concurrency
};

// Loads the profiles, plans memory and builds one ReplayConfig per (variant, concurrency).
// Throws ds::Error naming the bad option (unknown tier, model that does not fit, ...).
PreparedSweep prepare_sweep(const ReplaySetup& setup);
// The same on a given hardware profile (setup.hardware is not read): calibration fits use it.
PreparedSweep prepare_sweep(const ReplaySetup& setup, const HardwareProfile& hardware);

// The CacheConfig of one variant (exposed for tests).
CacheConfig make_cache_config(const ReplaySetup& setup, const CacheVariant& variant,
                              const ModelProfile& model, const HardwareProfile& hw, const MemoryPlan& plan);

}  // namespace ds
