// The engine runs behind `deltaserve generate`: one prompt, or a JSONL batch (engine/request_batch.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine_flags.h"

namespace ds::cli {

// Loads the model, runs one greedy request (stopping after eos_token_id when stop_at_eos), returns
// the generated ids.
std::vector<int32_t> generate_one(const std::string& model_dir, const std::vector<int32_t>& prompt,
                                  int max_tokens, bool stop_at_eos, const EngineFlags& flags);

// Reads `requests_path` (at most 1 GiB), runs the batch, writes `out_path` atomically; an output
// location that cannot be written fails before the model is loaded.
void run_request_file(const std::string& model_dir, const std::string& requests_path,
                      const std::string& out_path, const EngineFlags& flags);

}  // namespace ds::cli
