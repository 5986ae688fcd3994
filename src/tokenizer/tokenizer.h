// Tokenizer = mergeable ranks + special tokens + pre-tokenization pattern (tiktoken's model).
// encode: repair ill-formed UTF-8 (U+FFFD per maximal subpart), optionally split very long runs
// (Kimi's encode does), match special tokens first (unless they are to be read as plain text),
// pre-tokenize the text between them, BPE each piece. decode: token bytes concatenated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_ranks.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"

namespace ds::tok {

// How special-token text in the input is read.
enum class SpecialMode {
  kAllow,      // "<|im_end|>" in the text becomes the special token (trusted text: templates)
  kPlainText,  // encoded as ordinary text (untrusted input: users' message contents)
};

struct TokenizerOptions {
  // Kimi's encode: split the text into blocks of at most this many code points, then split runs
  // of whitespace / non-whitespace (Python str.isspace) longer than max_run_chars. 0 = off.
  size_t max_block_chars = 0;
  size_t max_run_chars = 0;
};

class Tokenizer {
 public:
  Tokenizer(BpeRanks ranks, SpecialTokens specials, std::string_view pattern, TokenizerOptions options = {});

  std::vector<int32_t> encode(std::string_view text, SpecialMode mode = SpecialMode::kPlainText) const;
  void encode(std::string_view text, SpecialMode mode, std::vector<int32_t>& out) const;

  // Raw bytes of the tokens (may end inside a UTF-8 sequence); a special token decodes to its
  // text unless skip_special. Throws ds::Error on an id outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;
  std::string_view token_bytes(int32_t id) const;  // special: its text
  bool valid_id(int32_t id) const;
  bool is_special(int32_t id) const { return specials_.text(id) != nullptr; }

  const BpeRanks& ranks() const { return ranks_; }
  const SpecialTokens& specials() const { return specials_; }
  std::optional<int32_t> special_id(std::string_view text) const { return specials_.id(text); }
  int32_t n_vocab() const { return n_vocab_; }  // 1 + the largest id (ranks and specials)
  const TokenizerOptions& options() const { return options_; }
  const std::string& pattern() const { return pre_.pattern(); }

 private:
  void encode_block(std::string_view text, SpecialMode mode, std::vector<int32_t>& out) const;
  void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;

  BpeRanks ranks_;
  SpecialTokens specials_;
  PreTokenizer pre_;
  TokenizerOptions options_;
  int32_t n_vocab_ = 0;
};

// Streaming detokenizer: push ids as they are sampled, get text that never ends inside a UTF-8
// sequence; bytes that later tokens could still complete are held back. finish() flushes
// (an unfinished sequence becomes U+FFFD).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false)
      : tok_(&tok), skip_special_(skip_special) {}
  std::string push(int32_t id);
  std::string finish();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace ds::tok
