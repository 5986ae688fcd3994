// Pre-tokenization: splits text into the pieces BPE runs on, with a tiktoken-style regex
// (leftmost-first alternation, lookahead, Unicode properties and class intersections) through
// ICU. Text between matches is dropped, as tiktoken's find_iter loop does.
//
// `\s` must mean \p{White_Space}, as in the Rust regex crate tiktoken uses. ICU 72 implements it
// so, though its user guide documents [\t\n\f\r\p{Z}] (no U+000B, U+0085); the pattern is
// rewritten to spell the property explicitly so the meaning does not depend on that.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds::tok {

// Kimi Linear / K2 `pat_str` (tokenization_kimi.py in the moonshotai/Kimi-Linear-48B-A3B-Instruct
// Hugging Face repository): Han runs, two letter-run rules that exclude Han with class
// intersections, 1-3 digits, punctuation runs, newlines and whitespace.
extern const char* const kKimiPattern;
// tiktoken's cl100k_base and o200k_base patterns (openai/tiktoken, tiktoken_ext/openai_public.py).
extern const char* const kCl100kPattern;
extern const char* const kO200kPattern;

// `pattern` with \s / \S outside escapes rewritten to \p{White_Space} / \P{White_Space}.
std::string icu_compatible_pattern(std::string_view pattern);

class PreTokenizer {
 public:
  explicit PreTokenizer(std::string_view pattern);  // throws ds::Error on a bad pattern
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Pieces of `text` (valid UTF-8) as [begin, end) byte ranges. Thread-safe.
  void split(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds::tok
