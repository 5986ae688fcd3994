// `deltaserve bench floor`: measures this machine's limits (streaming read, memcpy, f32 GEMM rate)
// the way `bench forward --measure-floor` does, best of several rounds, and with `--out` writes them
// as a hardware profile (data/profiles/hardware/*.json format) so that the simulator can stand in
// for the CPU engine: `replay --hardware FILE`. The profile is measured, not fitted: efficiencies are
// 1 (the rates are achieved rates) and the per-step overhead is 0.
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_floor.h"
#include "commands.h"
#include "core/check.h"
#include "core/file_io.h"
#include "plan/hardware_profile.h"

namespace ds::cli {
namespace {

struct FloorArgs {
  int rounds = 3;
  std::string out;   // hardware profile JSON to write ("" = print only)
  std::string name;  // profile name (default: the file's stem)
};

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a;
  f >> a;
  return a.empty() ? "?" : a;
}

nlohmann::ordered_json profile_json(const FloorArgs& a, const MeasuredFloor& m, int threads) {
  const double ram = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  const std::string how = fmt::format(
      "measured by `deltaserve bench floor --rounds {}` with {} OpenMP threads on {}, {} (load average {} at "
      "the end; best of the rounds)",
      a.rounds, threads, cpu_model_name(), date, load_average());
  nlohmann::ordered_json j;
  j["name"] = a.name;
  j["description"] =
      fmt::format("{}, {} threads (the CPU engine: `replay --executor model`)", cpu_model_name(), threads);
  j["hbm_bytes"] = ram;
  j["hbm_bw_bytes_s"] = m.read_gbs * 1e9;
  j["bf16_flops"] = m.sgemm_gflops * 1e9;
  j["fp8_flops"] = m.sgemm_gflops * 1e9;
  j["fp4_flops"] = 0;
  j["nvlink_bw_bytes_s"] = m.copy_gbs * 1e9;
  j["host_dram_bytes"] = ram;
  j["host_dram_bw_bytes_s"] = m.read_gbs * 1e9;
  j["host_link_bw_bytes_s"] = m.copy_gbs * 1e9;
  j["gemm_efficiency"] = 1.0;
  j["attention_efficiency"] = 1.0;
  j["memory_efficiency"] = 1.0;
  j["comm_efficiency"] = 1.0;
  j["host_link_efficiency"] = 1.0;
  j["comm_latency_s"] = 0.0;
  j["runtime_reserve_bytes"] = 0.0;
  j["step_overhead_s"] = 0.0;
  j["sources"] = {
      {"hbm_bytes",
       "physical memory (sysconf _SC_PHYS_PAGES x page size): the CPU engine's KV and states live in DRAM"},
      {"hbm_bw_bytes_s", "streaming read of a 1 GiB buffer by all threads; " + how},
      {"bf16_flops",
       fmt::format(
           "OpenBLAS sgemm 2048^3 ({} kernels): the CPU kernels widen bf16 weights to f32, so the f32 GEMM "
           "rate is the peak (our linear() f32 GEMM reached {:.1f} GFLOP/s in the same run); {}",
           m.blas_core, m.linear_gflops, how)},
      {"fp8_flops", "no fp8 arithmetic on the CPU: fp8 work runs at the f32 rate (= bf16_flops)"},
      {"fp4_flops", "no fp4 arithmetic on the CPU (0 = unsupported)"},
      {"nvlink_bw_bytes_s", "no tensor parallelism on the CPU (tp = 1, never used); set to the memcpy rate"},
      {"host_dram_bytes", "the host tier is the same DRAM"},
      {"host_dram_bw_bytes_s", "the host tier is the same DRAM: = hbm_bw_bytes_s"},
      {"host_link_bw_bytes_s",
       "memcpy between two 256 MiB buffers, one thread (a tier transfer is a copy); " + how},
      {"gemm_efficiency", "1: the peak above is a measured rate, not a datasheet number; not fitted"},
      {"attention_efficiency", "1: not fitted (the live-vs-simulated comparison reports the ratio instead)"},
      {"memory_efficiency", "1: the bandwidth above is a measured streaming rate; not fitted"},
      {"comm_efficiency", "1: unused at tp = 1"},
      {"host_link_efficiency", "1: the copy rate above is measured"},
      {"comm_latency_s", "0: no collectives at tp = 1"},
      {"runtime_reserve_bytes", "0: no device runtime; the weights are counted by the planner"},
      {"step_overhead_s", "0: not measured here (the live-vs-simulated comparison shows what it would be)"}};
  return j;
}

void run_bench_floor(FloorArgs a) {
  DS_CHECK(a.rounds >= 1 && a.rounds <= 100, "--rounds must be in [1, 100], got {}", a.rounds);
  MeasuredFloor best;
  for (int r = 0; r < a.rounds; ++r) {
    const MeasuredFloor m = measure_floor();
    fmt::print(
        "round {}: load average {}; streaming read {:.1f} GB/s, memcpy {:.1f} GB/s, OpenBLAS sgemm 2048^3 "
        "{:.1f} "
        "GFLOP/s ({}), linear() f32 GEMM {:.1f} GFLOP/s\n",
        r + 1, load_average(), m.read_gbs, m.copy_gbs, m.sgemm_gflops, m.blas_core, m.linear_gflops);
    best.read_gbs = std::max(best.read_gbs, m.read_gbs);
    best.copy_gbs = std::max(best.copy_gbs, m.copy_gbs);
    best.sgemm_gflops = std::max(best.sgemm_gflops, m.sgemm_gflops);
    best.linear_gflops = std::max(best.linear_gflops, m.linear_gflops);
    best.blas_core = m.blas_core;
  }
  fmt::print(
      "best of {}: streaming read {:.1f} GB/s, memcpy {:.1f} GB/s, sgemm {:.1f} GFLOP/s, linear() {:.1f} "
      "GFLOP/s ({} OpenMP threads)\n",
      a.rounds, best.read_gbs, best.copy_gbs, best.sgemm_gflops, best.linear_gflops, omp_get_max_threads());
  if (a.out.empty()) return;
  if (a.name.empty()) {
    const std::string file = a.out.substr(a.out.find_last_of('/') + 1);
    a.name = file.ends_with(".json") ? file.substr(0, file.size() - 5) : file;
  }
  const nlohmann::ordered_json j = profile_json(a, best, omp_get_max_threads());
  HardwareProfile::from_json(nlohmann::json::parse(j.dump()), a.out);  // what we write must load
  write_file_atomic(a.out, j.dump(2) + "\n");
  fmt::print("wrote hardware profile {} ({})\n", a.out, a.name);
}

}  // namespace

void register_bench_floor(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "floor", "Measure this machine's streaming bandwidth and GEMM rate; --out writes a hardware profile");
  auto a = std::make_shared<FloorArgs>();
  cmd->add_option("--rounds", a->rounds, "measurement rounds (the best of each rate is kept)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "write a hardware profile JSON here (data/profiles/hardware/ format)");
  cmd->add_option("--name", a->name, "profile name (default: the --out file name without .json)");
  cmd->callback([a] { run_bench_floor(*a); });
}

}  // namespace ds::cli
