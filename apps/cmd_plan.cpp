#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan", "Memory plan: weights, KV bytes per token, KDA state bytes, KV token budget");
  cmd->callback([] { ds::fail("'plan' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
