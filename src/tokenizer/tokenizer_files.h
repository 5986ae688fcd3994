// Loading a tokenizer from a Hugging Face checkpoint folder the way Kimi's tokenization_kimi.py
// does: `tiktoken.model` (mergeable ranks) + `tokenizer_config.json` (added_tokens_decoder,
// bos/eos, chat_template). Special ids are num_base .. num_base + 257 (256 reserved + 2), named by
// added_tokens_decoder where listed, else "<|reserved_token_{id}|>".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace ds::tok {

inline constexpr const char* kTiktokenFile = "tiktoken.model";
inline constexpr const char* kTokenizerConfigFile = "tokenizer_config.json";
inline constexpr int kKimiReservedSpecialTokens = 256;

struct TokenizerConfig {
  std::vector<SpecialToken> added_tokens;  // added_tokens_decoder
  std::string bos_token, eos_token;        // "" when absent
  std::string chat_template;               // Jinja source text; "" when absent
  bool present = false;                    // the file existed
};

// Errors name `source` and the offending key.
TokenizerConfig parse_tokenizer_config(std::string_view json_text, std::string_view source);

// The special tokens Kimi's tokenizer defines for `n_base` mergeable ranks; reserved ids at or
// above `vocab_limit` (the model's vocab_size; 0 = no limit) are left out, since the model can
// neither read nor produce them.
std::vector<SpecialToken> kimi_special_tokens(uint32_t n_base, const TokenizerConfig& config,
                                              int32_t vocab_limit = 0);

struct LoadedTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
  TokenizerConfig config;
};

bool has_tokenizer_files(const std::string& dir);  // `dir`/tiktoken.model exists
// Throws ds::Error naming the missing or bad file. `vocab_limit` as in kimi_special_tokens; an
// ordinary or listed token at or above it is an error.
LoadedTokenizer load_tokenizer_dir(const std::string& dir, int32_t vocab_limit = 0);

}  // namespace ds::tok
