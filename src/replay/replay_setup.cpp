#include "replay/replay_setup.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"

namespace ds {

std::vector<CacheVariant> default_variants() {
  return {
      CacheVariant{.label = "hbm", .retention = "interval:32768", .eviction = "leaf-lru", .tiers = {"hbm"}},
      CacheVariant{.label = "hbm+dram",
                   .retention = "interval:32768",
                   .eviction = "leaf-lru",
                   .tiers = {"hbm", "dram"}},
      CacheVariant{.label = "semantic", .retention = "semantic", .eviction = "leaf-lru", .tiers = {"hbm"}},
  };
}

namespace {

// vLLM's geometry and budget for this deployment: blocks of the vLLM planner budget (or of
// --kv-budget-tokens), live-state blocks with the speculative tokens, retention interval from the
// variant's "interval:N" (else vLLM's default 0).
void configure_vllm(CacheConfig& c, const ReplaySetup& setup, const CacheVariant& variant,
                    const ModelProfile& model, const MemoryPlan& plan) {
  const VllmGeometry g = vllm_geometry(model, VllmGeometryOptions{.tp = setup.gpus,
                                                                  .dcp = setup.dcp,
                                                                  .kv_dtype_bytes = setup.kv_dtype_bytes,
                                                                  .spec_tokens = setup.spec.draft_tokens});
  DS_CHECK(g.n_kda_groups > 0,
           "replay: the vllm cache model needs a hybrid KDA + MLA model, {} has no KDA layer", model.name);
  c.cache_model = "vllm";
  c.page_tokens = g.block_tokens;
  c.vllm.kda_groups = g.n_kda_groups;
  c.vllm.live_blocks = int(g.live_state_blocks);
  c.vllm.block_bytes = g.block_bytes;
  c.vllm.num_blocks = setup.kv_budget_tokens > 0
                          ? (setup.kv_budget_tokens + g.block_tokens - 1) / g.block_tokens
                          : plan.vllm.num_blocks;
  c.vllm.retention_interval = 0;
  if (variant.retention.rfind("interval:", 0) == 0) {
    const int64_t n = std::stoll(variant.retention.substr(9));
    c.vllm.retention_interval = (n + g.block_tokens - 1) / g.block_tokens * g.block_tokens;
  }
  c.retention = fmt::format("vllm:{}", c.vllm.retention_interval);
  c.eviction = "vllm-lru";
}

// SGLang's two pools out of the same device budget: mamba_budget = budget * r / (1 + r) in whole
// request states (ModelRunner's split of the memory left after weights), the rest in KV pages.
void configure_sglang(CacheConfig& c, const ReplaySetup& setup, const MemoryPlan& plan,
                      int64_t device_bytes) {
  DS_CHECK(plan.kda_state_bytes_per_gpu > 0, "replay: the sglang cache model needs a hybrid KDA + MLA model");
  DS_CHECK(setup.sglang_mamba_ratio > 0 && setup.sglang_mamba_ratio < 100,
           "replay: sglang mamba ratio must be in (0, 100), got {}", setup.sglang_mamba_ratio);
  const double r = setup.sglang_mamba_ratio;
  c.cache_model = "sglang";
  c.sglang.page_bytes = c.page_bytes();
  c.sglang.state_bytes = c.sizes.checkpoint_bytes;
  c.sglang.state_slots =
      static_cast<int64_t>(double(device_bytes) * r / (1 + r) / double(c.sglang.state_bytes));
  c.sglang.kv_pages = static_cast<int64_t>(double(device_bytes) / (1 + r) / double(c.sglang.page_bytes));
  c.sglang.track_interval = setup.sglang_track_interval;
  c.retention = "sglang";
  c.eviction = "sglang-lru";
}

}  // namespace

CacheConfig make_cache_config(const ReplaySetup& setup, const CacheVariant& variant,
                              const ModelProfile& model, const HardwareProfile& hw, const MemoryPlan& plan) {
  CacheConfig c;
  const int tp = setup.gpus;
  c.sizes.kv_bytes_per_token = plan.kv_bytes_per_token;
  c.sizes.checkpoint_bytes = static_cast<int64_t>(std::ceil(plan.kda_state_bytes_per_gpu));
  c.sizes.live_state_bytes = c.sizes.checkpoint_bytes;
  c.sizes.flops_per_token = model.linear_flops_per_token() / tp;
  c.sizes.attn_flops_per_token_ctx = model.mla_attention_flops(1, 1 << 16) / double(1 << 16) / tp;
  c.retention = variant.retention;
  c.eviction = variant.eviction;
  c.max_running = std::max(setup.max_running, 1);
  DS_CHECK(!variant.tiers.empty() && variant.tiers.front() == "hbm",
           "replay: tiers must start with 'hbm' (then optionally 'dram'), got '{}'",
           variant.tiers.empty() ? std::string() : variant.tiers.front());
  DS_CHECK(
      variant.cache_model == "deltaserve" || variant.cache_model == "vllm" || variant.cache_model == "sglang",
      "replay: unknown cache model '{}' (deltaserve, vllm, sglang)", variant.cache_model);
  if (variant.cache_model == "vllm") configure_vllm(c, setup, variant, model, plan);
  int64_t device_bytes = static_cast<int64_t>(plan.cache_bytes);
  if (setup.kv_budget_tokens > 0 &&
      (__builtin_mul_overflow(setup.kv_budget_tokens, plan.kv_bytes_per_token, &device_bytes) ||
       device_bytes > kMaxTierBytes))
    fail("replay: a KV budget of {} tokens x {} bytes per token exceeds the cache's {}-byte tier limit",
         setup.kv_budget_tokens, plan.kv_bytes_per_token, kMaxTierBytes);
  if (c.cache_model == "vllm") device_bytes = c.vllm.num_blocks * c.vllm.block_bytes;
  if (variant.cache_model == "sglang") {
    DS_CHECK(variant.tiers.size() == 1, "replay: the sglang cache model has no host tier (tiers {})",
             fmt::join(variant.tiers, ","));
    configure_sglang(c, setup, plan, device_bytes);
  }
  double hbm_bw = hw.hbm_bw_bytes_s * hw.memory_efficiency;
  c.tiers.push_back(CacheTier{.name = "hbm",
                              .capacity_bytes = device_bytes,
                              .read_bw_bytes_per_s = hbm_bw,
                              .write_bw_bytes_per_s = hbm_bw});
  for (size_t i = 1; i < variant.tiers.size(); ++i) {
    DS_CHECK(variant.tiers[i] == "dram" && i == 1,
             "replay: unknown or repeated tier '{}' (supported: hbm, hbm,dram)", variant.tiers[i]);
    double link = hw.host_link_bw_bytes_s * hw.host_link_efficiency;
    const double host =
        setup.host_bytes > 0 ? setup.host_bytes : plan.host_dram_bytes * setup.host_cache_fraction;
    c.tiers.push_back(CacheTier{.name = "dram",
                                .capacity_bytes = static_cast<int64_t>(host),
                                .read_bw_bytes_per_s = link,
                                .write_bw_bytes_per_s = link});
    if (c.cache_model == "vllm") c.vllm.host_blocks = static_cast<int64_t>(host) / c.vllm.block_bytes;
  }
  c.validate();
  return c;
}

PreparedSweep prepare_sweep(const ReplaySetup& setup) {
  return prepare_sweep(setup, HardwareProfile::load(setup.hardware));
}

PreparedSweep prepare_sweep(const ReplaySetup& setup, const HardwareProfile& hardware) {
  DS_CHECK(setup.gpus >= 1, "replay: the GPU count must be >= 1, got {}", setup.gpus);
  DS_CHECK(!setup.concurrency.empty(), "replay: empty concurrency list");
  DS_CHECK(std::isfinite(setup.duration_s) && setup.duration_s > 0 && setup.duration_s <= kMaxReplayDurationS,
           "replay: the duration must be finite, > 0 and <= {} s, got {}", kMaxReplayDurationS,
           setup.duration_s);
  DS_CHECK(setup.kv_budget_tokens >= 0, "replay: the KV budget must be >= 0 tokens, got {}",
           setup.kv_budget_tokens);
  DS_CHECK(setup.dcp >= 1 && setup.gpus % setup.dcp == 0,
           "replay: the decode-context-parallel size {} must divide the GPU count {}", setup.dcp, setup.gpus);
  DS_CHECK(setup.max_step_tokens >= 1, "replay: the step token budget must be >= 1, got {}",
           setup.max_step_tokens);
  DS_CHECK(setup.harness.empty() || setup.harness == "default" || setup.harness == "bench" ||
               setup.harness == "agentx",
           "replay: unknown harness '{}' (default, bench, agentx)", setup.harness);
  PreparedSweep sw;
  sw.model = ModelProfile::load(setup.model);
  if (setup.routed_expert_bits > 0)  // another storage format of the same experts (e.g. NVFP4 4.5 bits)
    sw.model.weights[size_t(WeightKind::RoutedExpert)].bits = setup.routed_expert_bits;
  sw.hardware = hardware;
  PlanOptions po;
  po.gpus = setup.gpus;
  po.tp = setup.gpus;
  po.dcp = setup.dcp;
  po.kv_dtype_bytes = setup.kv_dtype_bytes;
  po.max_batched_tokens = setup.max_step_tokens;
  sw.plan = make_plan(sw.model, sw.hardware, po);
  DS_CHECK(sw.plan.fits || setup.kv_budget_tokens > 0,
           "replay: model '{}' does not fit on {} x {} (no KV budget left); more GPUs are needed",
           setup.model, setup.gpus, setup.hardware);
  CostOptions co;
  co.tp = setup.gpus;
  co.dcp = setup.dcp;
  co.kv_dtype_bytes = setup.kv_dtype_bytes;
  co.expert_compute_bits = setup.expert_compute_bits;
  co.step_overhead_s = setup.step_overhead_s;
  co.spec = setup.spec;
  sw.cost = std::make_unique<CostModel>(sw.model, sw.hardware, co);
  auto variants = setup.variants.empty() ? default_variants() : setup.variants;
  for (const auto& v : variants) {
    CacheConfig cache = make_cache_config(setup, v, sw.model, sw.hardware, sw.plan);
    for (int c : setup.concurrency) {
      DS_CHECK(c >= 1, "replay: concurrency values must be >= 1, got {}", c);
      ReplayConfig rc;
      rc.label = v.label;
      rc.concurrency = c;
      rc.seed = setup.seed;
      rc.duration_s = setup.duration_s;
      rc.max_think_s = setup.max_think_s;
      rc.live_output = setup.live_output;
      rc.gpu_hour_usd = setup.gpu_hour_usd >= 0 ? setup.gpu_hour_usd : sw.hardware.gpu_hour_usd;
      rc.gpus = setup.gpus;
      rc.kv_budget_tokens = cache.cache_model == "vllm" ? cache.vllm.num_blocks * cache.page_tokens
                            : cache.cache_model == "sglang"
                                ? cache.sglang.kv_pages * cache.page_tokens
                                : cache.tiers[0].capacity_bytes / cache.sizes.kv_bytes_per_token;
      rc.scheduler = SchedulerConfig{.max_step_tokens = setup.max_step_tokens,
                                     .max_running = setup.max_running,
                                     .mixed_batches = setup.mixed_batches,
                                     .reserve_full_prompt = setup.reserve_full_prompt};
      if (setup.harness == "bench") {  // sglang.bench_serving: all lanes at t = 0, each request once
        rc.warmup = false;
        rc.duration_s = 0;
      }
      if (setup.harness == "agentx") {  // the harness keeps its own clock: warm-up, window, cool-down
        rc.agentx = true;
        rc.agentx_options = setup.agentx;
        rc.duration_s = 0;
      }
      rc.cache = cache;
      rc.executor.seed = setup.seed;
      sw.configs.push_back(std::move(rc));
    }
  }
  return sw;
}

}  // namespace ds
