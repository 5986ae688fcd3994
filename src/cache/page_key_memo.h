// PageKeyMemo: the chained page keys of recently looked-up prompts. A request that the admission
// gate holds is looked up again every scheduler step, and re-hashing a 600k-token prompt each time
// dominated long replays. An entry holds a copy of its prompt and is found by comparing tokens
// (several times cheaper than chaining the page hashes), so a lookup is exact whatever buffer the
// prompt lives in. Entries hold a prefix of the key chain: callers extend it as far as they read.
// Least recently used entry replaced; not thread-safe (one per cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ds {

class PageKeyMemo {
 public:
  explicit PageKeyMemo(size_t entries = 8);
  // The memoised key prefix of `prompt` (empty for a prompt not seen recently). The reference stays
  // valid until the next call; the caller may append the keys that follow.
  std::vector<uint64_t>& keys(std::span<const int32_t> prompt);

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::vector<uint64_t> keys;
    uint64_t last_use = 0;
  };
  std::vector<Entry> entries_;
  size_t capacity_;
  uint64_t clock_ = 0;
};

}  // namespace ds
