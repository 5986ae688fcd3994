// PrefixOracle: the infinite, page-granular prefix cache used for the theoretical hit rate of a
// replay: the longest prefix of whole pages of a prompt that any earlier prompt of the same run
// already contained. Same granularity and "last token is always computed" rule as the real cache,
// so an unbounded cache with the every-block policy realizes exactly this rate.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>

namespace ds {

class PrefixOracle {
 public:
  explicit PrefixOracle(int64_t page_tokens);

  // Hit length (tokens, a multiple of page_tokens, <= size - 1) of `prompt` against every prompt
  // observed before; then records the prompt's full pages. Mutates.
  int64_t observe(std::span<const int32_t> prompt);

  int64_t n_pages_seen() const { return static_cast<int64_t>(seen_.size()); }

 private:
  int64_t page_tokens_;
  std::unordered_set<uint64_t> seen_;  // chained hashes of every page prefix seen
};

}  // namespace ds
