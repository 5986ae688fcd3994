// Engine flags shared by `generate`, `serve` and `replay --executor model`: the prefix cache (retention,
// eviction, tiers, budgets in MLA-KV tokens, page size), the scheduler (step budget, running
// requests) and where the model runs (--device cpu: ModelRunner + ModelExecutor; --device cuda:
// the device forward + GpuExecutor), turned into an EngineConfig sized for the executor's storage.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "device_flags.h"
#include "engine/engine.h"
#include "exec/model_executor.h"

namespace ds::cli {

struct EngineFlags {
  std::string retention = "interval:32768";
  std::string eviction = "leaf-lru";
  std::string tiers = "hbm";
  int64_t kv_budget_tokens = 131072;  // device tier, in MLA-KV tokens of the model
  int64_t host_budget_tokens = 0;     // dram tier (with --tiers hbm,dram); 0 = 4 x kv budget
  int64_t page_tokens = 64;
  int64_t step_tokens = 8192;
  int max_running = 256;
  DeviceFlags device;
};

// --retention --eviction --tiers --kv-budget-tokens --host-budget-tokens --page-tokens
// --step-tokens --max-running. With `with_budgets` false, only the policy flags and --page-tokens
// (replay has its own budget flags).
void add_engine_flags(CLI::App& cmd, EngineFlags& f, bool with_budgets = true);

// The engine configuration for a model executor: byte sizes from the executor, budgets from the
// flags. Errors name the flag.
EngineConfig model_engine_config(const CacheModelSizes& sizes, const EngineFlags& f);
inline EngineConfig model_engine_config(const ModelExecutor& exec, const EngineFlags& f) {
  return model_engine_config(exec.cache_sizes(), f);
}

// The model behind the engine, on the flags' device.
struct ModelBackend {
  std::unique_ptr<ModelRunner> runner;        // --device cpu
  std::unique_ptr<DeviceModel> device_model;  // --device cuda
  std::unique_ptr<Executor> exec;
  CacheModelSizes sizes;
  const ModelConfig& config() const { return runner ? runner->config() : device_model->config(); }
};
ModelBackend load_model_backend(const std::string& model_dir, const EngineFlags& f);
// Drops the backend's executor (its pools) and makes a fresh one on the same loaded model.
void reset_executor(ModelBackend& b, const EngineFlags& f);

}  // namespace ds::cli
