#include "replay/prefix_oracle.h"

#include "core/check.h"
#include "core/hash.h"

namespace ds {

PrefixOracle::PrefixOracle(int64_t page_tokens) : page_tokens_(page_tokens) {
  DS_CHECK(page_tokens >= 1, "prefix oracle: page_tokens must be >= 1, got {}", page_tokens);
}

int64_t PrefixOracle::observe(std::span<const int32_t> prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t n_pages = n / page_tokens_;
  const int64_t n_hit_pages_max = n > 0 ? (n - 1) / page_tokens_ : 0;
  int64_t hit = 0;
  bool matching = true;
  uint64_t h = kRootPageKey;
  for (int64_t p = 0; p < n_pages; ++p) {
    h = chain_key(h, hash_page(prompt.subspan(p * page_tokens_, page_tokens_)));
    bool inserted = seen_.insert(h).second;
    if (matching && !inserted && p < n_hit_pages_max)
      hit = (p + 1) * page_tokens_;
    else
      matching = false;
  }
  return hit;
}

}  // namespace ds
