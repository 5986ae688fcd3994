// Special tokens (text <-> id) and the matcher that finds them in text before BPE runs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ds::tok {

struct SpecialToken {
  std::string text;
  int32_t id = 0;
};

class SpecialTokens {
 public:
  SpecialTokens() = default;
  explicit SpecialTokens(std::vector<SpecialToken> tokens);  // ids and texts must be unique

  struct Match {
    size_t pos = 0;  // byte offset of the match
    size_t len = 0;  // 0 = no special token at or after `from`
    int32_t id = 0;
  };
  // Leftmost occurrence at or after `from`; the longest token there when several match.
  Match find(std::string_view text, size_t from) const;

  std::optional<int32_t> id(std::string_view text) const;
  const std::string* text(int32_t id) const;  // nullptr when `id` is not special
  const std::vector<SpecialToken>& all() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<SpecialToken> tokens_;  // sorted by text length, longest first
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> by_text_;
  std::vector<size_t> lengths_;  // distinct text lengths, longest first
  std::unordered_map<int32_t, size_t> by_id_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace ds::tok
