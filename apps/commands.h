// Subcommand registration for the deltaserve CLI. Each cmd_<name>.cpp defines one register_*
// function that adds its subcommand (options + callback) to the parent app. Callbacks throw
// ds::Error on failure; main() turns that into one line on stderr and exit code 1.
#pragma once

#include <CLI/CLI.hpp>

namespace ds::cli {

// One line per command: what it does, then its status (the README's table says the same). "works":
// implemented end to end and covered by tests; limits are named.

// replay: traces through the engine, scheduler and cache on the simulated executor, on the CPU model
// engine (--executor model), or with --endpoint to an OpenAI-compatible server. Works.
void register_replay(CLI::App& app);
// plan: memory plan of a model on a node. Works.
void register_plan(CLI::App& app);
// calibrate: cost model vs published measurements, optional fit. Works.
void register_calibrate(CLI::App& app);
// logits: token ids -> logits safetensors. Works; CPU only, one sequence, no cache.
void register_logits(CLI::App& app);
// generate: token ids through the engine (scheduler, prefix cache, CPU model executor), one prompt
// or a JSONL batch (--requests). Works; CPU only, token ids only (no tokenizer).
void register_generate(CLI::App& app);
// serve: OpenAI-compatible HTTP server over a checkpoint folder on the CPU model engine. Works; CPU
// only, n = 1.
void register_serve(CLI::App& app);
// bench: benchmarks; adds the bench_* subcommands below. Results belong in docs/perf.md.
void register_bench(CLI::App& app);

void register_bench_forward(CLI::App& bench);  // bench forward: CPU forward vs roofline floors
void register_bench_floor(CLI::App& bench);  // bench floor: measured bandwidth/GEMM rate -> hardware profile
void register_bench_cache(CLI::App& bench);  // bench cache: prefix-cache operations per second
void register_bench_tokenizer(CLI::App& bench);  // bench tokenizer: BPE encoding MB/s
void register_bench_gpu(CLI::App& bench);  // bench gpu: whole-model GPU forward vs streaming / tensor floors

}  // namespace ds::cli
