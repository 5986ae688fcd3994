// `deltaserve plan`: memory plan of a model on a node (see src/plan/planner.h for the rule).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/check.h"
#include "plan/economics.h"
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
  int ep = 0;           // 0 = --gpus
  double ep_bytes = 3;  // P: dispatch + combine bytes per activation element
  bool economics = false;
};

// The planned model's EP comm/compute ratio at --ep (its KV throughput is in the plan itself).
void add_ep_ratio(const PlanArgs& a, const HardwareProfile& hw, std::string& doc) {
  const ArchProfile arch = ArchProfile::load(a.model);
  if (arch.expert_intermediate() <= 0) return;
  const int ep = a.ep > 0 ? a.ep : a.gpus;
  const EpRatio r = ep_comm_compute_ratio(arch, hw, ep, a.gpus, a.ep_bytes);
  if (!a.json) {
    doc += fmt::format(
        "MoE EP comm / compute (E = {}): P F / (6 m B) (1 - 1/E) = {} B x {:.3g} FLOP/s / (6 x {} x {:.3g} "
        "B/s) x {:.3f} "
        "= {:.3f}; m for 1.0: {:.0f}\n",
        ep, r.p_bytes, r.ffn_flops_s, r.m, r.net_bytes_s, 1.0 - 1.0 / ep, r.ratio, r.m_for_unity);
    return;
  }
  nlohmann::json j = nlohmann::json::parse(doc);
  j["ep_comm_compute_ratio"] = {{"ep", ep},
                                {"ratio", r.ratio},
                                {"m", r.m},
                                {"m_for_unity", r.m_for_unity},
                                {"p_bytes", r.p_bytes},
                                {"ffn_flops_s", r.ffn_flops_s},
                                {"net_bytes_s", r.net_bytes_s}};
  doc = j.dump(2);
}

// Cross-model tables over every bundled family config on H200 and B300 (8 GPUs).
void print_economics_tables(const PlanArgs& a, int kv_bytes) {
  std::vector<ArchProfile> archs;
  for (const std::string& n : ArchProfile::bundled_names()) archs.push_back(ArchProfile::load(n));
  const std::vector<HardwareProfile> hws = {HardwareProfile::load("h200"), HardwareProfile::load("b300")};
  fmt::print(
      "MoE EP communication / computation, T_comm / T_comp = P F / (6 m B) (1 - 1/E), P = {} B; "
      "m1 = the m that makes it 1.0 (E <= {}: NVLink, beyond: scale-out NIC)\n{}\n",
      a.ep_bytes, a.gpus, ep_ratio_table(archs, hws, {8, 64}, a.gpus));
  fmt::print("KV throughput, Gbit/s = KV bytes of one sequence / its prefill time on {} GPUs ({} KV)\n{}",
             a.gpus, kv_bytes == 1 ? "fp8" : "bf16", kv_throughput_table(archs, hws, a.gpus, kv_bytes));
}

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
  if (a.economics) {
    print_economics_tables(a, opt.kv_dtype_bytes);
    return;
  }
  const MemoryPlan plan = make_plan(model, hw, opt);
  std::string doc = a.json ? plan_json(plan) : plan_table(plan);
  add_ep_ratio(a, hw, doc);
  fmt::print("{}\n", doc);
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
  cmd->add_option("--ep", args->ep,
                  "Expert-parallel size for the MoE comm/compute ratio (default: --gpus; beyond --gpus the "
                  "scale-out NIC carries it)");
  cmd->add_option("--ep-bytes", args->ep_bytes,
                  "P: bytes per activation element sent, dispatch + combine (FP8 + BF16 = 3)")
      ->capture_default_str();
  cmd->add_flag(
      "--economics", args->economics,
      "Print the EP ratio and KV throughput tables over every bundled model family on H200 and B300");
  auto* tp = cmd->get_option("--tp");
  cmd->callback([args, tp] { run_plan(*args, tp->count() > 0); });
}

}  // namespace ds::cli
