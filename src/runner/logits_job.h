// LogitsJob: what `deltaserve logits` computes, as library functions so tests call exactly the
// CLI's code path (also the cold reference the engine's warm-equals-cold tests compare against). Decode
// semantics (fixture `decode` case): decode_tokens[0] = argmax(last prompt logits); decode_logits[j] = logits
// after feeding decode_tokens[j]; decode_tokens[j+1] = argmax(decode_logits[j]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "runner/model_runner.h"

namespace ds {

struct LogitsJobResult {
  int64_t vocab = 0;
  std::vector<float> logits;           // f32 [T, vocab] for every prompt position
  std::vector<int32_t> decode_tokens;  // I32 [N]
  std::vector<float> decode_logits;    // f32 [N, vocab]
};

// Prefills `tokens` in one call (all logits), then greedily decodes n_decode tokens one by one.
LogitsJobResult run_logits_job(const ModelRunner& runner, const std::vector<int32_t>& tokens, int n_decode);

// Writes `logits` F32 [T, vocab] and, when N > 0, `decode_tokens` I32 [N] and `decode_logits`
// F32 [N, vocab] to a safetensors file, atomically. The AtomicFile form writes into a file opened
// before the work (so a bad output location fails first) and commits it.
void write_logits_job(const std::string& path, const LogitsJobResult& r);
void write_logits_job(AtomicFile& file, const LogitsJobResult& r);

inline constexpr int64_t kMaxTokenFileBytes = int64_t{256} << 20;  // ~20M token ids as text

// Token ids from "1,2,3" (commas and/or whitespace) or from a file with one id per line (at most
// kMaxTokenFileBytes).
std::vector<int32_t> parse_token_list(const std::string& text, const std::string& source);
std::vector<int32_t> read_token_file(const std::string& path);

}  // namespace ds
