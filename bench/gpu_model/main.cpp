// bench_gpu_model: `deltaserve bench gpu` as a small executable (links only the device forward, so it
// runs on a GPU machine without the CLI's other libraries).
#include <cstdio>

#include "core/check.h"
#include "gpu_model_bench.h"

int main(int argc, char** argv) {
  CLI::App app{"Whole-model GPU benchmark on random weights (see deltaserve bench gpu)"};
  ds::bench::GpuBenchArgs a;
  ds::bench::add_gpu_model_bench_options(app, a);
  CLI11_PARSE(app, argc, argv);
  try {
    ds::bench::run_gpu_model_bench(a);
  } catch (const ds::Error& e) {
    std::fprintf(stderr, "bench_gpu_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
