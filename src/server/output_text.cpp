#include "server/output_text.h"

#include <utility>

#include "tokenizer/utf8.h"

namespace ds {

OutputText::OutputText(const tok::Tokenizer* tok, std::vector<std::string> stop, bool skip_special)
    : tok_(tok), stop_(std::move(stop)) {
  for (const auto& s : stop_) max_stop_ = std::max(max_stop_, s.size());
  if (tok_) decoder_ = std::make_unique<tok::StreamDecoder>(*tok_, skip_special);
}

std::string OutputText::push(int32_t token) {
  if (stopped_) return {};
  tokens_.push_back(token);
  if (!decoder_) return {};
  held_ += decoder_->push(token);
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  // Keep the last max_stop_ - 1 bytes (a stop string may still complete), on a UTF-8 boundary.
  if (max_stop_ <= 1) return std::exchange(held_, {});
  if (held_.size() < max_stop_) return {};
  size_t n = held_.size() - (max_stop_ - 1);
  while (n > 0 && (static_cast<uint8_t>(held_[n]) & 0xC0) == 0x80) --n;
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  return out;
}

std::string OutputText::finish() {
  if (stopped_ || !decoder_) return std::exchange(held_, {});
  held_ += decoder_->finish();
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    held_.resize(cut);
  }
  return std::exchange(held_, {});
}

}  // namespace ds
