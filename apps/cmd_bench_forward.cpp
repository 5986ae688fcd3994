#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_bench_forward(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("forward", "CPU forward benchmark: prefill and decode tok/s vs the machine's floor");
  cmd->callback([] { ds::fail("'forward' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
