#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_replay(CLI::App& app) {
  auto* cmd = app.add_subcommand("replay", "Replay agentic/production traces through the scheduler and prefix cache");
  cmd->callback([] { ds::fail("'replay' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
