// `deltaserve replay`: trace replay through the real scheduler and prefix cache on the simulated
// executor. With no arguments: the bundled Claude Code sample, Kimi K3 on 8 x B300, concurrency
// 1..32, three cache variants side by side (hbm interval:32768, + dram tier, semantic).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "commands.h"
#include "core/check.h"
#include "replay/progress_bar.h"
#include "replay/replay_presets.h"
#include "replay/replay_setup.h"
#include "replay/report.h"
#include "replay_endpoint.h"
#include "replay_model.h"
#include "trace/trace.h"
#include "trace/trace_stats.h"

namespace ds::cli {
namespace {

struct ReplayFlags {
  std::string trace;
  std::string concurrency = "1,2,4,8,16,24,32";
  std::string retention, eviction, tiers;
  std::string kv_dtype = "fp8";
  std::string expert_format;  // "" = the model config's
  std::string scheduler = "mixed";
  std::string cache_model;
  std::string preset;
  std::string out;
  bool skip_bad = false;
  bool json = false;
  int threads = 2;
  ReplaySetup setup;
  EndpointFlags endpoint;
  std::string executor = "sim";  // sim | model
  std::string compare_sim;       // --executor model: also simulate on this hardware profile
  int64_t page_tokens = 64;      // --executor model
  DeviceFlags device;            // --executor model
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, sep);)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

std::vector<int> parse_concurrency(const std::string& s) {
  std::vector<int> values;
  for (const auto& p : split(s, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    DS_CHECK(used == p.size() && v >= 1 && v <= 4096,
             "--concurrency: '{}' is not an integer in [1, 4096] (in '{}')", p, s);
    values.push_back(v);
  }
  DS_CHECK(!values.empty(), "--concurrency: empty list '{}'", s);
  return values;
}

// A single variant from --retention/--eviction/--tiers, or the default three when none is given.
std::vector<CacheVariant> variants_from(const ReplayFlags& f) {
  if (f.retention.empty() && f.eviction.empty() && f.tiers.empty() && f.cache_model.empty()) return {};
  CacheVariant v;
  if (!f.cache_model.empty()) v.cache_model = f.cache_model;
  if (!f.retention.empty()) v.retention = f.retention;
  if (!f.eviction.empty()) v.eviction = f.eviction;
  if (!f.tiers.empty()) v.tiers = split(f.tiers, ',');
  v.label.clear();
  for (size_t i = 0; i < v.tiers.size(); ++i) v.label += (i ? "+" : "") + v.tiers[i];
  v.label += v.cache_model != "deltaserve" ? "/" + v.cache_model : "/" + v.retention + "/" + v.eviction;
  return {v};
}

// --preset: the preset's setup, with the few options a preset leaves open taken from the command
// line when given (trace, concurrency, cache model, seed, agentx windows, threads, output).
void apply_preset(ReplayFlags& f, const CLI::App& cmd) {
  ReplayPreset p = replay_preset(f.preset);
  const bool given_trace = cmd.count("--trace") > 0, given_conc = cmd.count("--concurrency") > 0;
  ReplaySetup user = f.setup;
  f.setup = p.setup;
  if (!given_trace) f.trace = p.trace;
  if (!given_conc) {
    f.concurrency.clear();
    for (int c : p.setup.concurrency) f.concurrency += (f.concurrency.empty() ? "" : ",") + std::to_string(c);
  }
  if (cmd.count("--seed")) f.setup.seed = user.seed;
  if (cmd.count("--profile")) f.setup.agentx.profile_s = user.agentx.profile_s;
  if (cmd.count("--cache-warmup")) f.setup.agentx.cache_warmup_s = user.agentx.cache_warmup_s;
  if (cmd.count("--trace-idle-cap")) f.setup.agentx.trace_idle_cap_s = user.agentx.trace_idle_cap_s;
  if (cmd.count("--system-idle-cap")) f.setup.agentx.system_idle_cap_s = user.agentx.system_idle_cap_s;
  f.setup.sglang_mamba_ratio = user.sglang_mamba_ratio;
  if (cmd.count("--live-output")) f.setup.live_output = user.live_output;
  if (cmd.count("--reserve-full-prompt")) f.setup.reserve_full_prompt = user.reserve_full_prompt;
  if (cmd.count("--gpu-hour-usd")) f.setup.gpu_hour_usd = user.gpu_hour_usd;
  f.setup.sglang_track_interval = user.sglang_track_interval;
  if (!f.cache_model.empty()) {  // one copy of each preset arm per cache model (sglang: GPU-only arms)
    std::vector<CacheVariant> out;
    for (const std::string& model : split(f.cache_model, ','))
      for (CacheVariant v : f.setup.variants) {
        if (model == "sglang" && v.tiers.size() > 1) continue;
        v.cache_model = model;
        if (model == "deltaserve") {
          v.retention = f.retention.empty() ? "interval:32768" : f.retention;
          v.eviction = f.eviction.empty() ? "leaf-lru" : f.eviction;
        }
        v.label += "/" + model;
        out.push_back(std::move(v));
      }
    f.setup.variants = std::move(out);
  }
  f.kv_dtype = f.setup.kv_dtype_bytes == 1 ? "fp8" : f.setup.kv_dtype_bytes == 2 ? "bf16" : "f32";
  f.scheduler = f.setup.mixed_batches ? "mixed" : "prefill-first";
  f.retention.clear(), f.eviction.clear(), f.tiers.clear(), f.cache_model.clear(), f.expert_format.clear();
  if (!f.json) fmt::print("preset {}: {}\n", p.name, p.description);
}

// Flag checks with the flags' names, before any work (the library re-checks its own config).
void check_flags(const ReplayFlags& f) {
  if (f.setup.gpus < 1) fail("--gpus must be >= 1, got {}", f.setup.gpus);
  if (f.setup.dcp < 1 || f.setup.gpus % f.setup.dcp != 0)
    fail("--dcp {} must be >= 1 and divide --gpus {}", f.setup.dcp, f.setup.gpus);
  if (!std::isfinite(f.setup.duration_s) || f.setup.duration_s <= 0 ||
      f.setup.duration_s > kMaxReplayDurationS)
    fail("--duration must be finite, > 0 and <= {} s, got {}", kMaxReplayDurationS, f.setup.duration_s);
  if (f.setup.kv_budget_tokens < 0) fail("--kv-budget-tokens must be >= 0, got {}", f.setup.kv_budget_tokens);
  if (f.setup.max_step_tokens < 1) fail("--step-tokens must be >= 1, got {}", f.setup.max_step_tokens);
}

void run(ReplayFlags& f, const CLI::App& cmd) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<CacheVariant> preset_variants;
  if (!f.preset.empty()) {
    apply_preset(f, cmd);
    preset_variants = f.setup.variants;
  }
  check_flags(f);
  f.setup.concurrency = parse_concurrency(f.concurrency);
  if (!f.endpoint.endpoint.empty())
    return run_endpoint_replay_cli(cmd, f.endpoint, f.setup, f.trace, f.skip_bad, f.setup.concurrency, f.json,
                                   f.out);
  DS_CHECK(f.executor == "sim" || f.executor == "model", "--executor must be sim or model, got '{}'",
           f.executor);
  DS_CHECK(f.scheduler == "mixed" || f.scheduler == "prefill-first",
           "--scheduler must be mixed or prefill-first, got '{}'", f.scheduler);
  f.setup.mixed_batches = f.scheduler == "mixed";
  DS_CHECK(f.compare_sim.empty() || f.executor == "model", "--compare-sim needs --executor model");
  if (f.executor == "model") {
    EngineFlags e;
    if (!f.retention.empty()) e.retention = f.retention;
    if (!f.eviction.empty()) e.eviction = f.eviction;
    if (!f.tiers.empty()) e.tiers = f.tiers;
    if (f.setup.kv_budget_tokens > 0) e.kv_budget_tokens = f.setup.kv_budget_tokens;
    e.page_tokens = f.page_tokens;
    e.step_tokens = f.setup.max_step_tokens;
    e.max_running = f.setup.max_running;
    e.device = f.device;
    return run_model_replay_cli(cmd, f.setup.model, e, f.setup, f.trace, f.skip_bad, f.setup.concurrency,
                                f.endpoint.max_output_tokens, f.json, f.out, f.compare_sim);
  }
  DS_CHECK(f.device.device == "cpu" && f.device.precision == "f32",
           "--device and --precision apply to --executor model (the simulator has no device)");
  f.setup.variants = preset_variants.empty() ? variants_from(f) : preset_variants;
  DS_CHECK(f.kv_dtype == "fp8" || f.kv_dtype == "bf16" || f.kv_dtype == "f32",
           "--kv-dtype must be fp8, bf16 or f32, got '{}'", f.kv_dtype);
  f.setup.kv_dtype_bytes = f.kv_dtype == "fp8" ? 1 : f.kv_dtype == "bf16" ? 2 : 4;
  if (!f.expert_format.empty()) {
    DS_CHECK(f.expert_format == "mxfp4" || f.expert_format == "nvfp4" || f.expert_format == "bf16",
             "--expert-format must be mxfp4, nvfp4 or bf16, got '{}'", f.expert_format);
    // Storage bits incl. scales: MXFP4 one E8M0 per 32, NVFP4 one FP8 per 16.
    f.setup.routed_expert_bits = f.expert_format == "mxfp4" ? 4.25 : f.expert_format == "nvfp4" ? 4.5 : 16;
  }
  DS_CHECK(f.threads >= 1 && f.threads <= 256, "--threads must be in [1, 256], got {}", f.threads);
  // The report files are opened before any work, so a bad --out fails now, not after the sweep.
  std::optional<ReportFiles> reports;
  if (!f.json || !f.out.empty()) reports.emplace(f.out.empty() ? "replay-out" : f.out);
  TraceOptions topt;
  topt.skip_bad = f.skip_bad;
  if (f.setup.harness == "agentx") topt.subagents = SubagentMode::Branches;  // sub-agents run in parallel
  Trace trace = load_trace(f.trace, topt);
  if (!trace.closed_loop) {  // open loop: arrivals set the load
    if (cmd.count("--concurrency") > 0)
      fail(
          "--concurrency does not apply to {}: it is an open-loop trace (requests arrive at their "
          "timestamps)",
          trace.source);
    f.setup.concurrency = {1};
  }
  if (f.setup.harness.empty()) f.setup.harness = trace.fixed_length ? "bench" : "default";
  PreparedSweep sweep = prepare_sweep(f.setup);
  if (!f.json) {
    const std::string window =
        f.setup.harness == "agentx"
            ? fmt::format("agentx: {} s cache warm-up, {} s profiling, trace idle gaps <= {} s",
                          f.setup.agentx.cache_warmup_s, f.setup.agentx.profile_s,
                          f.setup.agentx.trace_idle_cap_s)
        : f.setup.harness == "bench" ? std::string("bench: each request once")
                                     : fmt::format("{} virtual s per run", f.setup.duration_s);
    fmt::print(
        "trace {} ({} sessions, {} skipped) | model {} on {} x {} | device KV budget {} tokens | {}\n{}\n",
        trace.source, trace.sessions.size(), trace.n_skipped_bad, sweep.model.name, f.setup.gpus,
        sweep.hardware.name, sweep.configs.front().kv_budget_tokens, window, depth_line(trace_depth(trace)));
  }
  std::vector<RunMetrics> runs;
  {
    ProgressBar bar(static_cast<int64_t>(sweep.configs.size()), "replay");
    runs = run_sweep(trace, *sweep.cost, sweep.configs, f.threads, [&](size_t i) {
      bar.advance(fmt::format("{} c={}", sweep.configs[i].label, sweep.configs[i].concurrency));
    });
  }
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Files first: a closed stdout (`| head`) must not lose them.
  const std::vector<std::string> files = reports ? reports->write(runs) : std::vector<std::string>{};
  if (f.json) {
    fmt::print("{}", runs_json(runs));
    return;
  }
  fmt::print("\n{}\n{}", runs_side_by_side(runs), runs_table(runs));
  fmt::print("\nwrote");
  for (const auto& p : files) fmt::print(" {}", p);
  fmt::print("\n{} runs in {:.1f} s wall ({} threads)\n", runs.size(), wall_s, f.threads);
}

}  // namespace

void register_replay(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  auto* cmd = app.add_subcommand(
      "replay",
      "Replay agentic/production traces through the scheduler and prefix cache (simulated executor)");
  cmd->add_option("--trace", flags->trace,
                  "trace: directory, .tar[.gz], .json/.jsonl file, 'synthetic[:k=v,...]' (default: bundled "
                  "Claude Code sample)");
  cmd->add_option("--model", flags->setup.model, "model profile name or config.json path")
      ->capture_default_str();
  cmd->add_option("--hardware", flags->setup.hardware, "hardware profile name or JSON path")
      ->capture_default_str();
  cmd->add_option("--gpus", flags->setup.gpus, "GPUs of the node (one TP group)")->capture_default_str();
  cmd->add_option("--concurrency", flags->concurrency, "closed-loop lanes, comma-separated")
      ->capture_default_str();
  cmd->add_option("--retention", flags->retention,
                  "checkpoint retention: every-block | interval:N | semantic | prompt-end | none");
  cmd->add_option("--eviction", flags->eviction,
                  "eviction: leaf-lru | consumed-state-lru | flop-per-byte[:alpha] | seglen[:w]");
  cmd->add_option("--tiers", flags->tiers, "cache tiers: hbm | hbm,dram");
  cmd->add_option(
      "--cache-model", flags->cache_model,
      "cache to emulate: deltaserve (default) | vllm (vLLM's hybrid allocator: its block geometry, "
      "budget, LRU free queue, retention) | sglang (SGLang's Mamba radix cache, extra_buffer: KV and "
      "state pools, tracked states, two LRUs); with --preset a comma-separated list runs each arm "
      "once per cache model");
  cmd->add_flag("--reserve-full-prompt", flags->setup.reserve_full_prompt,
                "scheduler: admission reserves cache room for the whole prompt (vLLM's default since v0.19), "
                "not only the first chunk");
  cmd->add_flag(
      "--live-output", flags->setup.live_output,
      "decoded tokens are the next prompt's tokens at those positions (when it extends this one), so "
      "KV and states after decoding can hit the next turn; off = the recorded conversation is resent "
      "whatever the model says (AgentX)");
  cmd->add_option(
      "--gpu-hour-usd", flags->setup.gpu_hour_usd,
      "$ per GPU-hour for $/M tokens (default: the hardware profile's sourced price, b300 $6.00)");
  cmd->add_option("--sglang-mamba-ratio", flags->setup.sglang_mamba_ratio,
                  "cache model sglang: state pool / KV pool bytes (--mamba-full-memory-ratio)")
      ->capture_default_str();
  cmd->add_option("--sglang-track-interval", flags->setup.sglang_track_interval,
                  "cache model sglang: decode state tracking interval (--mamba-track-interval)")
      ->capture_default_str();
  cmd->add_option("--host-bytes", flags->setup.host_bytes,
                  "dram tier per GPU, bytes (default: half of the hardware profile's host DRAM share)");
  cmd->add_option("--dcp", flags->setup.dcp,
                  "decode context parallel size (splits the MLA KV; divides --gpus)")
      ->capture_default_str();
  cmd->add_option("--kv-dtype", flags->kv_dtype,
                  "MLA KV cache dtype: fp8 | bf16 | f32 (the CPU engine's latents)")
      ->capture_default_str();
  cmd->add_option("--expert-format", flags->expert_format,
                  "routed expert storage: mxfp4 | nvfp4 | bf16 (default: the model config's)");
  cmd->add_option(
      "--expert-compute-bits", flags->setup.expert_compute_bits,
      "precision of routed-expert GEMMs: 4 | 8 | 16 (default: storage precision if the GPU has it)");
  cmd->add_option("--step-overhead", flags->setup.step_overhead_s,
                  "fixed host time per engine step, s (default: the hardware profile's step_overhead_s)");
  cmd->add_option("--spec-draft", flags->setup.spec.draft_tokens,
                  "speculative decoding: draft tokens proposed per step (0 = off)")
      ->capture_default_str();
  cmd->add_option("--spec-accept", flags->setup.spec.acceptance_length,
                  "speculative decoding: mean tokens committed per verify step, bonus token included")
      ->capture_default_str();
  cmd->add_option("--spec-draft-cost", flags->setup.spec.draft_cost_fraction,
                  "speculative decoding: drafter time as a fraction of a verify step")
      ->capture_default_str();
  cmd->add_option("--scheduler", flags->scheduler,
                  "batching: mixed (prefill chunks ride with decodes, vLLM) | prefill-first (SGLang)")
      ->capture_default_str();
  cmd->add_option(
      "--harness", flags->setup.harness,
      "replay semantics: default | bench (all lanes at t=0, no warm-up; default for random: traces) | "
      "agentx (InferenceX AgentX: sub-agent branches, warm-ups, profiling window, cool-down)");
  cmd->add_option("--think-cap", flags->setup.max_think_s, "default harness: cap on each think time, s")
      ->capture_default_str();
  cmd->add_option("--cache-warmup", flags->setup.agentx.cache_warmup_s,
                  "agentx: seconds of no-delay one-token cache warm-up after the snapshot warm-up")
      ->capture_default_str();
  cmd->add_option("--profile", flags->setup.agentx.profile_s, "agentx: profiling window, s")
      ->capture_default_str();
  cmd->add_option("--system-idle-cap", flags->setup.agentx.system_idle_cap_s,
                  "agentx: when nothing is in flight, the next request is due within this many s")
      ->capture_default_str();
  cmd->add_option("--trace-idle-cap", flags->setup.agentx.trace_idle_cap_s,
                  "agentx: each gap between a trace's request starts is compressed to at most this many s "
                  "(AIPerf --trace-idle-gap-cap-seconds; 0 = off)")
      ->capture_default_str();
  cmd->add_option(
      "--preset", flags->preset,
      "named setup: k3-b300-agentx (K3 on 8 x B300, vLLM cache, AgentX harness, GPU-only and DRAM arms); "
      "--trace, --concurrency, --cache-model, --seed, --profile, --cache-warmup still apply");
  cmd->add_option("--kv-budget-tokens", flags->setup.kv_budget_tokens,
                  "device cache budget in MLA-KV tokens (overrides the planner)");
  cmd->add_option("--seed", flags->setup.seed, "seed (session order, lane starts, fake tokens)")
      ->check(
          [](const std::string& v) { return v.starts_with("-") ? "must be >= 0, got " + v : std::string(); })
      ->capture_default_str();
  cmd->add_option("--duration", flags->setup.duration_s, "virtual seconds per run")->capture_default_str();
  cmd->add_option("--step-tokens", flags->setup.max_step_tokens, "scheduler token budget per step")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "sweep points run in parallel")->capture_default_str();
  cmd->add_flag("--skip-bad", flags->skip_bad, "skip (and count) malformed trace records instead of failing");
  cmd->add_option("--out", flags->out, "directory for replay.json/.csv and SVG plots (default replay-out)");
  cmd->add_flag("--json", flags->json, "print one JSON document {\"runs\": [...]} on stdout");
  add_endpoint_options(*cmd, flags->endpoint);
  cmd->add_option(
         "--executor", flags->executor,
         "sim (cost model, virtual clock) | model (the model engine on a wall clock, on --device; --model is "
         "then the checkpoint folder)")
      ->capture_default_str();
  cmd->add_option(
      "--compare-sim", flags->compare_sim,
      "--executor model: also replay every point on the simulator with this hardware profile (name or "
      "JSON path) and the same workload, scheduler and cache; prints live vs simulated side by side");
  cmd->add_option("--page-tokens", flags->page_tokens, "--executor model: KV page size in tokens")
      ->capture_default_str();
  add_device_flags(*cmd, flags->device);
  cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace ds::cli
