// `deltaserve replay --endpoint URL`: the replay workload sent over HTTP to any OpenAI-compatible
// server, one concurrency point after another (each run's prompts re-salted so that runs share no
// prefixes on the live server). Reports in the same formats as the simulated replay.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/replay_setup.h"

namespace ds::cli {

struct EndpointFlags {
  std::string endpoint;  // "" = simulated replay
  bool text_prompts = false;
  int64_t vocab_size = 0;
  int64_t max_output_tokens = 0;
  double request_timeout_s = 600;
};

void add_endpoint_options(CLI::App& cmd, EndpointFlags& f);

// `cmd` tells which shared flags were given (--model = served model name, --gpus, --duration).
void run_endpoint_replay_cli(const CLI::App& cmd, const EndpointFlags& f, const ReplaySetup& setup,
                             const std::string& trace_spec, bool skip_bad,
                             const std::vector<int>& concurrency, bool json, const std::string& out_dir);

}  // namespace ds::cli
