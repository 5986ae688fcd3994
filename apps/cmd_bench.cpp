#include "commands.h"

namespace ds::cli {

void register_bench(CLI::App& app) {
  auto* bench =
      app.add_subcommand("bench", "Benchmarks with roofline floors (results belong in docs/perf.md)");
  bench->require_subcommand(1);
  register_bench_forward(*bench);
  register_bench_floor(*bench);
  register_bench_cache(*bench);
  register_bench_tokenizer(*bench);
  register_bench_gpu(*bench);
}

}  // namespace ds::cli
