#include "trace/prefix_oracle.h"

#include <vector>

#include "core/check.h"
#include "core/hash.h"

namespace ds {

PrefixOracle::PrefixOracle(int64_t page_tokens) : page_tokens_(page_tokens) {
  DS_CHECK(page_tokens >= 1, "prefix oracle: page_tokens must be >= 1, got {}", page_tokens);
}

int64_t PrefixOracle::observe_units(std::span<const uint64_t> unit_hashes, int64_t max_hit) {
  int64_t hit = 0;
  bool matching = true;
  uint64_t key = kRootPageKey;
  for (size_t u = 0; u < unit_hashes.size(); ++u) {
    key = chain_key(key, unit_hashes[u]);
    const bool inserted = seen_.insert(key).second;
    if (matching && !inserted && int64_t(u) < max_hit)
      hit = int64_t(u) + 1;
    else
      matching = false;
  }
  return hit;
}

int64_t PrefixOracle::observe(std::span<const int32_t> prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  std::vector<uint64_t> pages(size_t(n / page_tokens_));
  for (size_t p = 0; p < pages.size(); ++p)
    pages[p] = hash_page(prompt.subspan(p * size_t(page_tokens_), size_t(page_tokens_)));
  const int64_t max_hit_pages = n > 0 ? (n - 1) / page_tokens_ : 0;  // the last token is computed
  return observe_units(pages, max_hit_pages) * page_tokens_;
}

int64_t PrefixOracle::observe_blocks(std::span<const uint64_t> block_ids) {
  std::vector<uint64_t> units(block_ids.size());
  for (size_t b = 0; b < units.size(); ++b) units[b] = splitmix64(block_ids[b]);
  return observe_units(units, int64_t(units.size()));
}

}  // namespace ds
