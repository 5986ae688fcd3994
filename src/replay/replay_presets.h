// Named replay setups (`deltaserve replay --preset NAME`): a deployment, a harness, a workload and the
// cache variants to compare, each value with its source, so a published measurement can be checked
// with one command. A preset fixes everything but the options the CLI lets override (trace,
// concurrency, cache model, seed, harness windows, output).
#pragma once

#include <string>
#include <vector>

#include "replay/replay_setup.h"

namespace ds {

struct ReplayPreset {
  std::string name;
  std::string description;  // one line for the report header
  std::string trace;        // load_trace spec
  ReplaySetup setup;        // variants filled
};

// Throws ds::Error listing the known presets on an unknown name.
ReplayPreset replay_preset(const std::string& name);
std::vector<std::string> replay_preset_names();

}  // namespace ds
