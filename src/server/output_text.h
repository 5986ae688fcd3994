// OutputText: a request's sampled tokens turned into the text a client sees, incrementally: only
// complete UTF-8 (StreamDecoder), special tokens skipped when asked, and stop strings honoured —
// text that could still become a stop string is held back, and a match truncates the output there
// (the stop string itself is not returned, as in the OpenAI API).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ds {

class OutputText {
 public:
  // tok == nullptr: token-id-only serving (text is always empty).
  OutputText(const tok::Tokenizer* tok, std::vector<std::string> stop, bool skip_special);

  // Appends one sampled token; returns the text that became final. After a stop string matched,
  // stopped() is true and further tokens are ignored.
  std::string push(int32_t token);
  // End of generation: flushes what was held back (an unfinished UTF-8 sequence becomes U+FFFD).
  std::string finish();
  bool stopped() const { return stopped_; }
  // Tokens accepted so far (through the one that completed a stop string).
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  const tok::Tokenizer* tok_;
  std::vector<std::string> stop_;
  size_t max_stop_ = 0;
  std::unique_ptr<tok::StreamDecoder> decoder_;
  std::string held_;  // decoded text not yet returned (could be the start of a stop string)
  std::vector<int32_t> tokens_;
  bool stopped_ = false;
};

}  // namespace ds
