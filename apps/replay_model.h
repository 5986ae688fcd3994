// `deltaserve replay --executor model --model DIR`: the replay workload through the real model
// engine (ModelExecutor on the CPU, or GpuExecutor with --device cuda, behind the same Engine,
// Scheduler and HybridCache) on a wall clock, one concurrency point after another. Reports in the same
// formats as the simulated replay.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "engine_flags.h"
#include "replay/replay_setup.h"

namespace ds::cli {

// `engine` holds the cache and scheduler settings (from the replay flags); `cmd` tells whether
// --duration was given (wall seconds; default: the whole trace). setup.harness "bench" (or a
// fixed-length trace) starts every lane at t = 0 without warm-up. A non-empty `compare_hw` (hardware
// profile) also replays every point on the simulator with the same ReplayConfig (replay_compare.h).
void run_model_replay_cli(const CLI::App& cmd, const std::string& model_dir, const EngineFlags& engine,
                          const ReplaySetup& setup, const std::string& trace_spec, bool skip_bad,
                          const std::vector<int>& concurrency, int64_t max_output_tokens, bool json,
                          const std::string& out_dir, const std::string& compare_hw = "");

}  // namespace ds::cli
