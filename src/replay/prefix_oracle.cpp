#include "replay/prefix_oracle.h"

#include "core/check.h"

namespace ds {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Hash of a page chained on its parent's hash: equal only for equal whole prefixes (w.h.p.).
uint64_t chain(uint64_t parent, std::span<const int32_t> page) {
  uint64_t h = parent ^ 0x9e3779b97f4a7c15ULL;
  for (int32_t t : page) h = (h ^ static_cast<uint32_t>(t)) * 0x100000001b3ULL;
  return mix(h);
}

}  // namespace

PrefixOracle::PrefixOracle(int64_t page_tokens) : page_tokens_(page_tokens) {
  DS_CHECK(page_tokens >= 1, "prefix oracle: page_tokens must be >= 1, got {}", page_tokens);
}

int64_t PrefixOracle::observe(std::span<const int32_t> prompt) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t n_pages = n / page_tokens_;
  const int64_t n_hit_pages_max = n > 0 ? (n - 1) / page_tokens_ : 0;
  int64_t hit = 0;
  bool matching = true;
  uint64_t h = 0;
  for (int64_t p = 0; p < n_pages; ++p) {
    h = chain(h, prompt.subspan(p * page_tokens_, page_tokens_));
    bool inserted = seen_.insert(h).second;
    if (matching && !inserted && p < n_hit_pages_max)
      hit = (p + 1) * page_tokens_;
    else
      matching = false;
  }
  return hit;
}

}  // namespace ds
