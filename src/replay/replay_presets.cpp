#include "replay/replay_presets.h"

#include <fmt/ranges.h>

#include "core/check.h"

namespace ds {
namespace {

// InferenceX day-0 Kimi K3 agentic recipe on 8 x B300 (SemiAnalysisAI/InferenceX commit 4346729b3,
// benchmarks/single_node/agentic/kimik3_fp4_b300_vllm.sh and configs/nvidia-master.yaml
// kimik3-fp4-b300-vllm-agentic): vLLM TP8, FP8 KV, gpu-memory-utilization 0.90, max-model-len
// 1,048,576, prefix caching with the default retention interval 0, no speculative decoding,
// concurrency 1-24; arms GPU-resident and host DRAM through SimpleCPUOffloadConnector with
// cpu_bytes_to_use_per_rank = TOTAL_CPU_DRAM_GB (1889, dram-utilization 0.63 on cluster:b300-nv)
// x 1e9 / TP. Harness: AIPerf inferencex-agentx-mvp as build_replay_cmd ran it then (trajectory
// start 0.25-0.75, --agentic-cache-warmup-duration 600, benchmark duration 3600 s = InferenceX's
// agentic default, 10 s system idle cap).
ReplayPreset k3_b300_agentx() {
  ReplayPreset p;
  p.name = "k3-b300-agentx";
  p.description =
      "Kimi K3 on 8 x B300 (TP8, FP8 KV, vLLM 0.90) under the AgentX harness; GPU-only and host-DRAM "
      "(SimpleCPUOffloadConnector 236 GB per GPU) arms";
  p.trace = "synthetic:agentx";
  ReplaySetup& s = p.setup;
  s.model = "kimi-k3";
  s.hardware = "b300";
  s.gpus = 8;
  s.kv_dtype_bytes = 1;
  s.mixed_batches = true;        // vLLM
  s.reserve_full_prompt = true;  // vLLM >= 0.19 (the emulated vLLM cache gates admission the same way)
  s.max_step_tokens = 8192;
  s.harness = "agentx";
  s.agentx = AgentxOptions{};
  s.concurrency = {4, 8, 16, 24};
  s.host_bytes = 1889e9 / 8;
  s.variants = {
      CacheVariant{.label = "gpu",
                   .retention = "vllm:0",
                   .eviction = "vllm-lru",
                   .tiers = {"hbm"},
                   .cache_model = "vllm"},
      CacheVariant{.label = "gpu+dram",
                   .retention = "vllm:0",
                   .eviction = "vllm-lru",
                   .tiers = {"hbm", "dram"},
                   .cache_model = "vllm"},
  };
  return p;
}

}  // namespace

std::vector<std::string> replay_preset_names() {
  return {"k3-b300-agentx"};
}

ReplayPreset replay_preset(const std::string& name) {
  if (name == "k3-b300-agentx") return k3_b300_agentx();
  fail("unknown replay preset '{}' (known: {})", name, fmt::join(replay_preset_names(), ", "));
}

}  // namespace ds
