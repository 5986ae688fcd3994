// PrefixOracle: an infinite prefix cache that only counts hits, the one implementation of the
// theoretical hit rate. A prompt is a sequence of units (pages of token ids, or trace blocks); its
// hit is the longest run of leading units whose whole prefix an earlier observed prompt contained.
// On token prompts it has the real cache's page granularity and "last token is always computed"
// rule, so an unbounded cache with the every-block policy realizes exactly this rate.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>

namespace ds {

class PrefixOracle {
 public:
  // page_tokens: the page size used by observe() (>= 1).
  explicit PrefixOracle(int64_t page_tokens);

  // Hit length (tokens, a multiple of page_tokens, <= size - 1) of `prompt` against every prompt
  // observed before; then records the prompt's full pages. Mutates.
  int64_t observe(std::span<const int32_t> prompt);

  // Hit length (blocks, <= block_ids.size()) of a prompt given as trace block ids, each naming one
  // full block of tokens; then records every prefix. Mutates. Use one oracle for one kind of
  // prompt: block prompts and token prompts do not match each other.
  int64_t observe_blocks(std::span<const uint64_t> block_ids);

  int64_t n_prefixes_seen() const { return static_cast<int64_t>(seen_.size()); }

 private:
  // Hit units of a prompt given as one hash per unit, capped at max_hit; records every prefix.
  int64_t observe_units(std::span<const uint64_t> unit_hashes, int64_t max_hit);

  int64_t page_tokens_;
  std::unordered_set<uint64_t> seen_;  // chained keys of every unit prefix seen
};

}  // namespace ds
