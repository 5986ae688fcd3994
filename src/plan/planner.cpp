#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "plan/cost_model.h"

namespace ds {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void check_options(const ModelProfile& model, const PlanOptions& opt) {
  DS_CHECK(opt.gpus >= 1, "plan: the GPU count must be >= 1, got {}", opt.gpus);
  DS_CHECK(opt.tp >= 1, "plan: the tensor-parallel size must be >= 1, got {}", opt.tp);
  DS_CHECK(opt.gpus % opt.tp == 0, "plan: {} GPUs are not a multiple of the tensor-parallel size {}",
           opt.gpus, opt.tp);
  DS_CHECK(opt.dcp >= 1 && opt.tp % opt.dcp == 0,
           "plan: the decode-context-parallel size {} must divide the tensor-parallel size {}", opt.dcp,
           opt.tp);
  DS_CHECK(opt.kv_dtype_bytes == 1 || opt.kv_dtype_bytes == 2 || opt.kv_dtype_bytes == 4,
           "KV dtype must be fp8, bf16 or f32, got {} bytes", opt.kv_dtype_bytes);
  DS_CHECK(opt.gpu_memory_utilization > 0 && opt.gpu_memory_utilization <= 1,
           "gpu memory utilization must be in (0, 1], got {}", opt.gpu_memory_utilization);
  DS_CHECK(opt.max_batched_tokens >= 1, "max batched tokens must be >= 1, got {}", opt.max_batched_tokens);
  const ModelConfig& c = model.config;
  if (c.n_kda_layers() > 0)
    DS_CHECK(c.kda.n_head % opt.tp == 0,
             "plan: tensor-parallel size {} does not divide the {} KDA heads of {}", opt.tp, c.kda.n_head,
             model.name);
  if (c.n_mla_layers() > 0)
    DS_CHECK(c.mla.n_head % opt.tp == 0,
             "plan: tensor-parallel size {} does not divide the {} MLA heads of {}", opt.tp, c.mla.n_head,
             model.name);
}

}  // namespace

double activation_bytes_per_token(const ModelProfile& model, int tp) {
  const ModelConfig& c = model.config;
  const double D = c.hidden;
  // Residual stream: Block AttnRes keeps the embedding, every committed block and the partial
  // sum per token; a plain residual keeps input, residual and output.
  double residual = 3 * D;
  if (c.attn_res_block_size > 0) residual = (std::ceil(double(c.n_layer) / c.attn_res_block_size) + 2) * D;
  // Mixer: KDA q, k, v, output gate (H*K each) or MLA q, k, v per head, on this rank's heads.
  const double kda = 4.0 * c.kda.n_head * c.kda.head_dim / tp;
  const double mla = double(c.mla.n_head) / tp * (2.0 * c.mla.qk_head_dim() + c.mla.v_head_dim);
  // FFN: routed experts hold top-k permuted inputs and outputs at the expert width plus their
  // gate/up intermediates; f32 router logits count as two bf16 values each. Dense MLP: gate/up.
  const double Dl = c.moe.latent_dim > 0 ? c.moe.latent_dim : D;
  const double k = c.moe.n_expert_per_token;
  const double moe = c.moe.n_expert > 0
                         ? k * 2.0 * Dl + k * 2.0 * c.moe.expert_intermediate / tp + 2.0 * c.moe.n_expert
                         : 0.0;
  const double dense = 2.0 * c.dense_intermediate / tp;
  return 2.0 * (residual + std::max(kda, mla) + std::max(moe, dense));  // bf16
}

MemoryPlan make_plan(const ModelProfile& model, const HardwareProfile& hw, const PlanOptions& opt) {
  check_options(model, opt);
  MemoryPlan p;
  p.model = model.name;
  p.hardware = hw.name;
  p.gpus = opt.gpus;
  p.tp = opt.tp;
  p.dcp = opt.dcp;
  p.replicas = opt.gpus / opt.tp;
  p.kv_dtype_bytes = opt.kv_dtype_bytes;
  p.total_params = model.total_params();
  p.active_params_per_token = model.active_params_per_token();
  p.weight_bytes_total = model.weight_bytes();
  p.hbm_bytes = hw.hbm_bytes;
  p.usable_bytes = hw.hbm_bytes * opt.gpu_memory_utilization;
  p.weight_bytes = model.weight_bytes_per_gpu(opt.tp);
  p.activation_bytes = double(opt.max_batched_tokens) * activation_bytes_per_token(model, opt.tp);
  p.runtime_reserve_bytes = hw.runtime_reserve_bytes;
  const double left = p.usable_bytes - p.weight_bytes - p.activation_bytes - p.runtime_reserve_bytes;
  p.fits = left > 0;
  p.cache_bytes = std::max(0.0, left);
  p.kv_bytes_per_token = (model.kv_bytes_per_token(opt.kv_dtype_bytes) + opt.dcp - 1) / opt.dcp;
  if (p.kv_bytes_per_token > 0)
    p.kv_token_budget_per_replica = int64_t(std::floor(p.cache_bytes / double(p.kv_bytes_per_token)));
  p.kv_token_budget = p.kv_token_budget_per_replica * p.replicas;
  p.kda_state_bytes = model.kda_state_bytes();
  p.kda_state_bytes_per_gpu = double(p.kda_state_bytes) / opt.tp;
  if (p.kv_bytes_per_token > 0)
    p.checkpoint_tokens_equiv = p.kda_state_bytes_per_gpu / double(p.kv_bytes_per_token);
  p.host_dram_bytes = hw.host_dram_bytes;

  if (p.fits && model.config.n_mla_layers() > 0) {
    VllmBudget& v = p.vllm;
    v.geometry = vllm_geometry(model, VllmGeometryOptions{.tp = opt.tp,
                                                          .dcp = opt.dcp,
                                                          .kv_dtype_bytes = opt.kv_dtype_bytes,
                                                          .max_model_len = opt.max_model_len});
    v.cuda_graph_bytes = hw.hbm_bytes * opt.vllm_cuda_graph_fraction;
    v.cache_bytes = std::max(0.0, p.cache_bytes - v.cuda_graph_bytes);
    v.num_blocks = v.geometry.num_blocks(v.cache_bytes);
    v.raw_tokens = v.num_blocks * v.geometry.block_tokens * opt.dcp;
    v.reported_tokens = v.geometry.reported_tokens(v.cache_bytes) * opt.dcp;
  }

  const CostModel cost(model, hw,
                       CostOptions{.tp = opt.tp, .dcp = opt.dcp, .kv_dtype_bytes = opt.kv_dtype_bytes});
  for (int64_t t : opt.throughput_prompt_tokens) {
    DS_CHECK(t >= 1, "throughput prompt length must be >= 1, got {}", t);
    KvThroughputPoint pt;
    pt.prompt_tokens = t;
    pt.prefill_s = cost.prefill_time_s(t, opt.max_batched_tokens);
    pt.kv_bytes =
        double(t) * double(model.kv_bytes_per_token(opt.kv_dtype_bytes)) + double(p.kda_state_bytes);
    pt.kv_bytes_per_s = pt.prefill_s > 0 ? pt.kv_bytes / pt.prefill_s : 0;
    p.kv_throughput.push_back(pt);
  }
  return p;
}

std::string plan_json(const MemoryPlan& p) {
  nlohmann::json j;
  j["model"] = p.model;
  j["hardware"] = p.hardware;
  j["gpus"] = p.gpus;
  j["tp"] = p.tp;
  j["dcp"] = p.dcp;
  j["replicas"] = p.replicas;
  j["kv_dtype_bytes"] = p.kv_dtype_bytes;  // 1 = fp8, 2 = bf16, 4 = f32
  j["total_params"] = p.total_params;
  j["active_params_per_token"] = p.active_params_per_token;
  j["weight_bytes_total"] = p.weight_bytes_total;
  j["per_gpu"] = {{"hbm_bytes", p.hbm_bytes},
                  {"usable_bytes", p.usable_bytes},
                  {"weight_bytes", p.weight_bytes},
                  {"activation_bytes", p.activation_bytes},
                  {"runtime_reserve_bytes", p.runtime_reserve_bytes},
                  {"cache_bytes", p.cache_bytes},
                  {"kda_state_bytes_per_gpu", p.kda_state_bytes_per_gpu},
                  {"host_dram_bytes", p.host_dram_bytes}};
  j["fits"] = p.fits;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["kv_token_budget"] = p.kv_token_budget;
  j["kv_token_budget_per_replica"] = p.kv_token_budget_per_replica;
  j["kda_state_bytes"] = p.kda_state_bytes;
  j["checkpoint_tokens_equiv"] = p.checkpoint_tokens_equiv;
  nlohmann::json tp = nlohmann::json::array();
  for (const KvThroughputPoint& pt : p.kv_throughput) {
    tp.push_back({{"prompt_tokens", pt.prompt_tokens},
                  {"prefill_s", pt.prefill_s},
                  {"kv_bytes", pt.kv_bytes},
                  {"kv_bytes_per_s", pt.kv_bytes_per_s},
                  {"kv_gbit_per_s", pt.kv_bytes_per_s * 8 / 1e9}});
  }
  j["kv_throughput"] = tp;
  nlohmann::json by_len = nlohmann::json::object();  // the same numbers keyed by prompt length
  for (const KvThroughputPoint& pt : p.kv_throughput)
    by_len[std::to_string(pt.prompt_tokens)] = pt.kv_bytes_per_s * 8 / 1e9;
  j["kv_throughput_gbit_s"] = by_len;
  if (p.vllm.geometry.block_tokens > 0) {
    const VllmBudget& v = p.vllm;
    j["vllm"] = {{"block_tokens", v.geometry.block_tokens},
                 {"kda_groups", v.geometry.n_kda_groups},
                 {"layers_per_group", v.geometry.layers_per_group},
                 {"block_bytes_per_gpu", v.geometry.block_bytes},
                 {"state_padding", v.geometry.state_padding},
                 {"cuda_graph_bytes_per_gpu", v.cuda_graph_bytes},
                 {"cache_bytes_per_gpu", v.cache_bytes},
                 {"num_blocks", v.num_blocks},
                 {"raw_tokens", v.raw_tokens},
                 {"reported_tokens", v.reported_tokens}};
  }
  return j.dump(2);
}

std::string plan_table(const MemoryPlan& p) {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += fmt::format("  {:<34} {}\n", k, v); };
  auto gib = [](double b) { return fmt::format("{:.2f} GiB", b / kGiB); };
  s += fmt::format("memory plan: {} on {} x {} (TP {}, {} replica{}), {} KV cache\n", p.model, p.gpus,
                   p.hardware, p.tp, p.replicas, p.replicas == 1 ? "" : "s",
                   p.kv_dtype_bytes == 1   ? "fp8"
                   : p.kv_dtype_bytes == 2 ? "bf16"
                                           : "f32");
  line("parameters (total / active per token)",
       fmt::format("{:.3f} B / {:.2f} B", double(p.total_params) / 1e9,
                   double(p.active_params_per_token) / 1e9));
  line("weights (whole model)", fmt::format("{:.1f} GB", p.weight_bytes_total / 1e9));
  s += "per GPU:\n";
  line("HBM (device-reported)", gib(p.hbm_bytes));
  line("usable (x gpu_memory_utilization)", gib(p.usable_bytes));
  line("weights", gib(p.weight_bytes));
  line("activation reserve", gib(p.activation_bytes));
  line("runtime reserve", gib(p.runtime_reserve_bytes));
  line("cache (MLA KV + KDA states)",
       p.fits ? gib(p.cache_bytes) : "does not fit: weights + reserves exceed HBM");
  line("host DRAM share (second tier)", gib(p.host_dram_bytes));
  s += "cache:\n";
  line("MLA KV bytes per token", fmt::format("{} B", p.kv_bytes_per_token));
  line("KV token budget (node)",
       fmt::format("{} tokens ({:.2f} M)", p.kv_token_budget, p.kv_token_budget / 1e6));
  line("KDA state per sequence", fmt::format("{:.1f} MB ({:.1f} MB per GPU)", p.kda_state_bytes / 1e6,
                                             p.kda_state_bytes_per_gpu / 1e6));
  line("one checkpoint costs", fmt::format("{:.0f} KV tokens", p.checkpoint_tokens_equiv));
  if (p.vllm.geometry.block_tokens > 0) {
    const VllmBudget& v = p.vllm;
    const VllmGeometry& g = v.geometry;
    s += "as vLLM's hybrid allocator would report it (one pool, page-unified blocks):\n";
    line("attention block / KDA groups",
         fmt::format("{} tokens; {} KDA group{} of {} layers (state page padded {:+.1f} %)", g.block_tokens,
                     g.n_kda_groups, g.n_kda_groups == 1 ? "" : "s", g.layers_per_group,
                     100 * g.state_padding));
    line("CUDA-graph pool (vLLM >= 0.19)", fmt::format("-{} ({:.2f} % of HBM)", gib(v.cuda_graph_bytes),
                                                       100 * v.cuda_graph_bytes / p.hbm_bytes));
    line("cache in whole blocks", fmt::format("{} -> {} blocks of {:.2f} MiB", gib(v.cache_bytes),
                                              v.num_blocks, double(g.block_bytes) / (1 << 20)));
    line("tokens: all blocks / reported", fmt::format("{} / {} (\"GPU KV cache size\": max concurrency x {})",
                                                      v.raw_tokens, v.reported_tokens, g.max_model_len));
  }
  s += "KV throughput (KV bytes / prefill time, one prompt):\n";
  for (const KvThroughputPoint& pt : p.kv_throughput) {
    line(fmt::format("{}k prompt", pt.prompt_tokens / 1024),
         fmt::format("prefill {:.3f} s, KV {:.2f} GB, {:.2f} GB/s ({:.1f} Gbit/s)", pt.prefill_s,
                     pt.kv_bytes / 1e9, pt.kv_bytes_per_s / 1e9, pt.kv_bytes_per_s * 8 / 1e9));
  }
  return s;
}

}  // namespace ds
