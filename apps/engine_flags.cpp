#include "engine_flags.h"

#include "core/check.h"

namespace ds::cli {

void add_engine_flags(CLI::App& cmd, EngineFlags& f, bool with_budgets) {
  cmd.add_option("--retention", f.retention,
                 "checkpoint retention: every-block | interval:N | semantic | prompt-end | none")
      ->capture_default_str();
  cmd.add_option("--eviction", f.eviction,
                 "eviction: leaf-lru | consumed-state-lru | flop-per-byte[:alpha] | seglen[:w]")
      ->capture_default_str();
  cmd.add_option("--page-tokens", f.page_tokens, "KV page size in tokens (also the checkpoint grid)")
      ->capture_default_str();
  if (!with_budgets) return;
  add_device_flags(cmd, f.device);
  cmd.add_option("--tiers", f.tiers, "cache tiers: hbm | hbm,dram")->capture_default_str();
  cmd.add_option("--kv-budget-tokens", f.kv_budget_tokens, "device cache budget in MLA-KV tokens")
      ->capture_default_str();
  cmd.add_option("--host-budget-tokens", f.host_budget_tokens,
                 "dram tier budget in MLA-KV tokens (0: 4 x device)")
      ->capture_default_str();
  cmd.add_option("--step-tokens", f.step_tokens, "scheduler token budget per step")->capture_default_str();
  cmd.add_option("--max-running", f.max_running, "requests running at once")->capture_default_str();
}

EngineConfig model_engine_config(const CacheModelSizes& sizes, const EngineFlags& f) {
  DS_CHECK(f.page_tokens >= 1 && f.page_tokens <= 65536, "--page-tokens must be in [1, 65536], got {}",
           f.page_tokens);
  DS_CHECK(f.kv_budget_tokens >= 1 && f.kv_budget_tokens <= (int64_t{1} << 36),
           "--kv-budget-tokens must be in [1, 2^36], got {}", f.kv_budget_tokens);
  DS_CHECK(f.host_budget_tokens >= 0 && f.host_budget_tokens <= (int64_t{1} << 38),
           "--host-budget-tokens must be in [0, 2^38], got {}", f.host_budget_tokens);
  DS_CHECK(f.step_tokens >= 1 && f.step_tokens <= (1 << 20), "--step-tokens must be in [1, 2^20], got {}",
           f.step_tokens);
  DS_CHECK(f.max_running >= 1 && f.max_running <= 4096, "--max-running must be in [1, 4096], got {}",
           f.max_running);
  DS_CHECK(f.tiers == "hbm" || f.tiers == "hbm,dram", "--tiers must be 'hbm' or 'hbm,dram', got '{}'",
           f.tiers);
  EngineConfig c;
  c.scheduler = {.max_step_tokens = f.step_tokens, .max_running = f.max_running};
  c.cache.sizes = sizes;
  c.cache.page_tokens = f.page_tokens;
  c.cache.retention = f.retention;
  c.cache.eviction = f.eviction;
  c.cache.max_running = f.max_running;
  const int64_t kv = c.cache.sizes.kv_bytes_per_token;
  c.cache.tiers.push_back(CacheTier{.name = "hbm", .capacity_bytes = f.kv_budget_tokens * kv});
  if (f.tiers == "hbm,dram") {
    const int64_t host = f.host_budget_tokens > 0 ? f.host_budget_tokens : 4 * f.kv_budget_tokens;
    c.cache.tiers.push_back(CacheTier{.name = "dram", .capacity_bytes = host * kv});
  }
  try {
    c.cache.validate();
  } catch (const Error& e) {  // name the flags behind the config fields
    fail("bad cache flags (--retention '{}', --eviction '{}'): {}", f.retention, f.eviction, e.what());
  }
  return c;
}

ModelBackend load_model_backend(const std::string& model_dir, const EngineFlags& f) {
  ModelBackend b;
  if (f.device.on_cuda()) {
    DS_CHECK(f.max_running >= 1 && f.max_running <= 4096, "--max-running must be in [1, 4096], got {}",
             f.max_running);
    b.device_model = load_device_model(model_dir, f.device);
  } else {
    check_cpu_device_flags(f.device);
    b.runner = ModelRunner::load(model_dir);
  }
  reset_executor(b, f);
  return b;
}

void reset_executor(ModelBackend& b, const EngineFlags& f) {
  b.exec.reset();  // the old pools go before the new ones are allocated
  if (b.device_model) {
    auto exec = std::make_unique<GpuExecutor>(*b.device_model, f.page_tokens,
                                              GpuExecutorOptions{.max_running = f.max_running});
    b.sizes = exec->cache_sizes();
    b.exec = std::move(exec);
    return;
  }
  auto exec = std::make_unique<ModelExecutor>(*b.runner, f.page_tokens);
  b.sizes = exec->cache_sizes();
  b.exec = std::move(exec);
}

}  // namespace ds::cli
