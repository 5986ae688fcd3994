#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Greedy generation from token ids");
  cmd->callback([] { ds::fail("'generate' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
