#include "tokenizer/special_tokens.h"

#include <algorithm>

#include "core/check.h"

namespace ds::tok {

SpecialTokens::SpecialTokens(std::vector<SpecialToken> tokens) : tokens_(std::move(tokens)) {
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const SpecialToken& a, const SpecialToken& b) {
    return a.text.size() > b.text.size();
  });
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const SpecialToken& t = tokens_[i];
    DS_CHECK(!t.text.empty(), "special token {} has empty text", t.id);
    DS_CHECK(t.id >= 0, "special token '{}' has negative id {}", t.text, t.id);
    DS_CHECK(by_text_.emplace(t.text, t.id).second, "special token '{}' is listed twice", t.text);
    DS_CHECK(by_id_.emplace(t.id, i).second, "special token id {} is listed twice", t.id);
    first_byte_[uint8_t(t.text[0])] = true;
    if (lengths_.empty() || lengths_.back() != t.text.size()) lengths_.push_back(t.text.size());
  }
}

SpecialTokens::Match SpecialTokens::find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return {text.size(), 0, 0};
  for (size_t p = from; p < text.size(); ++p) {
    if (!first_byte_[uint8_t(text[p])]) continue;
    const std::string_view rest = text.substr(p);
    for (const size_t len : lengths_) {  // longest first
      if (len > rest.size()) continue;
      if (auto it = by_text_.find(rest.substr(0, len)); it != by_text_.end()) return {p, len, it->second};
    }
  }
  return {text.size(), 0, 0};
}

std::optional<int32_t> SpecialTokens::id(std::string_view text) const {
  auto it = by_text_.find(text);
  if (it == by_text_.end()) return std::nullopt;
  return it->second;
}

const std::string* SpecialTokens::text(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second].text;
}

}  // namespace ds::tok
