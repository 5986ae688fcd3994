// Engine flags shared by `generate` and `replay --executor model`: the prefix cache (retention,
// eviction, tiers, budgets in MLA-KV tokens, page size) and the scheduler (step budget, running
// requests), turned into an EngineConfig sized for a ModelExecutor's storage.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

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
};

// --retention --eviction --tiers --kv-budget-tokens --host-budget-tokens --page-tokens
// --step-tokens --max-running. With `with_budgets` false, only the policy flags and --page-tokens
// (replay has its own budget flags).
void add_engine_flags(CLI::App& cmd, EngineFlags& f, bool with_budgets = true);

// The engine configuration for a model executor: byte sizes from the executor, budgets from the
// flags. Errors name the flag.
EngineConfig model_engine_config(const ModelExecutor& exec, const EngineFlags& f);

}  // namespace ds::cli
