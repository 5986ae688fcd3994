#include "commands.h"
#include "core/check.h"

namespace ds::cli {

void register_logits(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Run token ids through a checkpoint and write logits to a safetensors file");
  cmd->callback([] { ds::fail("'logits' is not implemented yet (see the open issues)"); });
}

}  // namespace ds::cli
