#include "replay/replay_presets.h"

#include <fmt/ranges.h>

#include "core/check.h"

namespace ds {
namespace {

// The deployment both presets share: Kimi K3 on 8 x B300 as the InferenceX recipe runs it under vLLM
// (FP8 KV, mixed prefill/decode batches of 8,192 tokens, vLLM >= 0.19's full-prompt admission gate,
// which the emulated vLLM cache applies the same way), driven by the AgentX harness.
void set_k3_b300_vllm_agentx(ReplaySetup& s) {
  s.model = "kimi-k3";
  s.hardware = "b300";
  s.gpus = 8;
  s.kv_dtype_bytes = 1;
  s.mixed_batches = true;
  s.reserve_full_prompt = true;
  s.max_step_tokens = 8192;
  s.harness = "agentx";
  s.agentx = AgentxOptions{};
}

// InferenceX day-0 Kimi K3 agentic recipe on 8 x B300 (SemiAnalysisAI/InferenceX commit 4346729b3,
// benchmarks/single_node/agentic/kimik3_fp4_b300_vllm.sh and configs/nvidia-master.yaml
// kimik3-fp4-b300-vllm-agentic): vLLM TP8, FP8 KV, gpu-memory-utilization 0.90, max-model-len
// 1,048,576, prefix caching with the default retention interval 0, no speculative decoding,
// concurrency 1-24; arms GPU-resident and host DRAM through SimpleCPUOffloadConnector with
// cpu_bytes_to_use_per_rank = TOTAL_CPU_DRAM_GB (1889, dram-utilization 0.63 on cluster:b300-nv)
// x 1e9 / TP. Harness: AIPerf inferencex-agentx-mvp as build_replay_cmd ran it then (trajectory
// start 0.25-0.75, --agentic-cache-warmup-duration 600, benchmark duration 3600 s = InferenceX's
// agentic default, trace idle gaps compressed to 10 s and the 10 s system idle cap, both locked by
// the scenario).
ReplayPreset k3_b300_agentx() {
  ReplayPreset p;
  p.name = "k3-b300-agentx";
  p.description =
      "Kimi K3 on 8 x B300 (TP8, FP8 KV, vLLM 0.90) under the AgentX harness; GPU-only and host-DRAM "
      "(SimpleCPUOffloadConnector 236 GB per GPU) arms";
  p.trace = "synthetic:agentx";
  set_k3_b300_vllm_agentx(p.setup);
  ReplaySetup& s = p.setup;
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

// The policy comparison (docs/policy.md): K3 on 8 x B300 GPU-only, the AgentX-fitted synthetic under
// the AgentX harness with live outputs (decoded tokens reappear in the next prompt, so end-of-decode
// checkpoints can hit), vLLM's full-prompt admission gate for every arm, concurrency 8-32; every
// anchor policy in this cache, vLLM's and SGLang's caches emulated, and ours. Shorter windows than
// the AgentX preset (300 s cache warm-up, 1200 s profiling) to keep 36 runs within minutes.
ReplayPreset policy_k3_b300() {
  ReplayPreset p;
  p.name = "policy-k3-b300";
  p.description =
      "retention / eviction policies on Kimi K3, 8 x B300, GPU-only, synthetic:agentx under the AgentX "
      "harness "
      "with live outputs; anchors (vLLM interval:32768 and retention 0, SGLang consumed-state LRU, Marconi, "
      "every-block, prompt-end), the vLLM and SGLang caches emulated, and boundary-aware";
  p.trace = "synthetic:agentx";
  set_k3_b300_vllm_agentx(p.setup);
  ReplaySetup& s = p.setup;
  s.agentx.cache_warmup_s = 300;
  s.agentx.profile_s = 1200;
  s.live_output = true;
  s.concurrency = {8, 16, 24, 32};
  auto ours = [](const char* label, const char* retention, const char* eviction) {
    return CacheVariant{.label = label, .retention = retention, .eviction = eviction, .tiers = {"hbm"}};
  };
  s.variants = {
      ours("vllm-interval", "interval:32768", "leaf-lru"),
      ours("vllm-0", "junction", "leaf-lru"),
      ours("sglang-csl", "semantic", "consumed-state-lru"),
      ours("marconi", "semantic", "flop-per-byte"),
      ours("every-block", "every-block", "leaf-lru"),
      ours("prompt-end", "prompt-end", "leaf-lru"),
      ours("boundary-aware", "boundary-aware", "boundary-aware"),
      ours("boundary-aware:q", "boundary-aware", "boundary-aware:queue"),
      CacheVariant{.label = "vllm-cache",
                   .retention = "vllm:0",
                   .eviction = "vllm-lru",
                   .tiers = {"hbm"},
                   .cache_model = "vllm"},
      CacheVariant{.label = "sglang-cache",
                   .retention = "",
                   .eviction = "",
                   .tiers = {"hbm"},
                   .cache_model = "sglang"},
  };
  return p;
}

}  // namespace

std::vector<std::string> replay_preset_names() {
  return {"k3-b300-agentx", "policy-k3-b300"};
}

ReplayPreset replay_preset(const std::string& name) {
  if (name == "k3-b300-agentx") return k3_b300_agentx();
  if (name == "policy-k3-b300") return policy_k3_b300();
  fail("unknown replay preset '{}' (known: {})", name, fmt::join(replay_preset_names(), ", "));
}

}  // namespace ds
