// Page keys of the prefix tree: a 64-bit hash of one page of token ids, chained with the parent's
// key so one key names a whole page-aligned prefix. Invariant: equal prefixes give equal keys; the
// tree additionally checks the parent on lookup, so a key collision can only cost a miss.
#pragma once

#include <cstdint>
#include <span>

namespace ds {

constexpr uint64_t kRootPageKey = 0x9e3779b97f4a7c15ull;

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Hash of one page of token ids (four independent lanes so the multiplies overlap).
inline uint64_t hash_page(std::span<const int32_t> tokens) {
  uint64_t h[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                   0x082efa98ec4e6c89ull};
  const size_t n = tokens.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) {
      h[l] = (h[l] ^ static_cast<uint32_t>(tokens[i + l])) * 0x100000001b3ull;
      h[l] ^= h[l] >> 29;
    }
  }
  for (; i < n; ++i) h[0] = (h[0] ^ static_cast<uint32_t>(tokens[i])) * 0x100000001b3ull;
  return mix64(h[0] ^ mix64(h[1] + 1) ^ mix64(h[2] + 2) ^ mix64(h[3] + 3) ^ n);
}

// Key of a child page given its parent's key. Never 0 (PageKeyMap's empty marker).
inline uint64_t chain_key(uint64_t parent_key, uint64_t page_hash) {
  const uint64_t k = mix64(parent_key ^ (page_hash + 0x9e3779b97f4a7c15ull + (parent_key << 6)));
  return k != 0 ? k : 1;
}

}  // namespace ds
