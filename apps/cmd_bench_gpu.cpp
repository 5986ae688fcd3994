// `deltaserve bench gpu`: the whole-model GPU benchmark of bench/gpu_model/gpu_model_bench.h.
#include <memory>

#include "commands.h"
#include "gpu_model_bench.h"

namespace ds::cli {

void register_bench_gpu(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("gpu",
                                   "Whole-model GPU benchmark on random weights: decode and prefill tok/s vs "
                                   "the streaming / tensor floors");
  auto a = std::make_shared<bench::GpuBenchArgs>();
  bench::add_gpu_model_bench_options(*cmd, *a);
  cmd->callback([a] { bench::run_gpu_model_bench(*a); });
}

}  // namespace ds::cli
