// Subcommand registration for the deltaserve CLI. Each cmd_<name>.cpp defines one register_*
// function that adds its subcommand (options + callback) to the parent app. Callbacks throw
// ds::Error on failure; main() turns that into one line on stderr and exit code 1.
#pragma once

#include <CLI/CLI.hpp>

namespace ds::cli {

void register_replay(CLI::App& app);     // cmd_replay.cpp   — trace replay (simulated or live)
void register_plan(CLI::App& app);       // cmd_plan.cpp     — memory planner
void register_calibrate(CLI::App& app);  // cmd_calibrate.cpp — cost model vs published measurements
void register_logits(CLI::App& app);     // cmd_logits.cpp   — token ids -> logits safetensors
void register_generate(CLI::App& app);   // cmd_generate.cpp — greedy generation from token ids
void register_bench(CLI::App& app);      // cmd_bench.cpp    — benchmarks (adds the bench_* below)

void register_bench_forward(CLI::App& bench);    // cmd_bench_forward.cpp
void register_bench_cache(CLI::App& bench);      // cmd_bench_cache.cpp
void register_bench_tokenizer(CLI::App& bench);  // cmd_bench_tokenizer.cpp

}  // namespace ds::cli
