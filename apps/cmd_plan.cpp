// `deltaserve plan`: memory plan of a model on a node (see src/plan/planner.h for the rule).
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "core/check.h"
#include "plan/hardware_profile.h"
#include "plan/model_profile.h"
#include "plan/planner.h"

namespace ds::cli {

namespace {

struct PlanArgs {
  std::string model = "kimi-k3";
  std::string hardware = "b300";
  int gpus = 8;
  int tp = 0;  // set by --tp; without it one TP group over all --gpus
  std::string kv_dtype = "fp8";
  double gpu_memory_utilization = 0.90;
  int64_t max_batched_tokens = 8192;
  bool json = false;
};

void run_plan(const PlanArgs& a, bool tp_given) {
  if (a.gpus < 1) fail("--gpus must be >= 1, got {}", a.gpus);
  if (tp_given && a.tp < 1) fail("--tp must be >= 1, got {}", a.tp);
  const int tp = tp_given ? a.tp : a.gpus;
  if (a.gpus % tp != 0) fail("--gpus {} is not a multiple of --tp {}", a.gpus, tp);
  if (!(a.gpu_memory_utilization > 0 && a.gpu_memory_utilization <= 1))
    fail("--gpu-memory-utilization must be in (0, 1], got {}", a.gpu_memory_utilization);
  if (a.max_batched_tokens < 1) fail("--max-batched-tokens must be >= 1, got {}", a.max_batched_tokens);
  if (a.kv_dtype != "fp8" && a.kv_dtype != "bf16")
    fail("--kv-dtype must be fp8 or bf16, got \"{}\"", a.kv_dtype);
  const ModelProfile model = ModelProfile::load(a.model);
  const HardwareProfile hw = HardwareProfile::load(a.hardware);
  PlanOptions opt;
  opt.gpus = a.gpus;
  opt.tp = tp;
  opt.kv_dtype_bytes = a.kv_dtype == "fp8" ? 1 : 2;
  opt.gpu_memory_utilization = a.gpu_memory_utilization;
  opt.max_batched_tokens = a.max_batched_tokens;
  const MemoryPlan plan = make_plan(model, hw, opt);
  fmt::print("{}\n", a.json ? plan_json(plan) : plan_table(plan));
}

}  // namespace

void register_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "Memory plan: weights, KV bytes per token, KDA state bytes, KV token budget");
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--model", args->model, "Model profile name (kimi-k3, kimi-linear-48b) or config.json path")
      ->capture_default_str();
  cmd->add_option("--hardware", args->hardware, "Hardware profile name (h100, h200, b200, b300) or JSON path")
      ->capture_default_str();
  cmd->add_option("--gpus", args->gpus, "GPUs in the node")->capture_default_str();
  cmd->add_option("--tp", args->tp,
                  "Tensor-parallel size (gpus / tp data-parallel replicas; default: --gpus)");
  cmd->add_option("--kv-dtype", args->kv_dtype, "MLA KV cache dtype: fp8 or bf16")->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", args->gpu_memory_utilization,
                  "Fraction of HBM the engine may use (vLLM semantics)")
      ->capture_default_str();
  cmd->add_option("--max-batched-tokens", args->max_batched_tokens,
                  "Tokens per step: sizes the activation reserve and prefill chunks")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the plan as one JSON document");
  auto* tp = cmd->get_option("--tp");
  cmd->callback([args, tp] { run_plan(*args, tp->count() > 0); });
}

}  // namespace ds::cli
