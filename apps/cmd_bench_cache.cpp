#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_bench_cache(CLI::App& bench) {
  auto* cmd = bench.add_subcommand("cache", "Prefix cache benchmark: match/insert/evict operations per second");
  cmd->callback([] { ds::fail("'cache' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
