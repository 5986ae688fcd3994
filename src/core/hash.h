// Integer hashing, the one place for it: the splitmix64 mixer, a stream of pseudo-random numbers
// built on it, and the chained hash of a page of token ids that names a whole page-aligned prefix
// (used by the prefix cache and by the replay's theoretical-hit oracle). Pure functions: the same
// inputs give the same outputs on every platform.
#pragma once

#include <cstdint>
#include <span>

namespace ds {

inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio, odd

// The splitmix64 finaliser (Stafford's variant 13): a bijection on uint64 with good avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// splitmix64: mix64(x + golden gamma). Also a bijection.
constexpr uint64_t splitmix64(uint64_t x) {
  return mix64(x + kGoldenGamma);
}

// The splitmix64 generator: a seeded stream of uniform 64-bit values.
struct SplitMix64 {
  uint64_t state = 0;
  uint64_t next() {
    const uint64_t z = splitmix64(state);
    state += kGoldenGamma;
    return z;
  }
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
};

// Key of the empty prefix: the parent of every first page.
inline constexpr uint64_t kRootPageKey = kGoldenGamma;

// Hash of one page of token ids (four independent lanes so the multiplies overlap).
inline uint64_t hash_page(std::span<const int32_t> tokens) {
  uint64_t h[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                   0x082efa98ec4e6c89ULL};
  const size_t n = tokens.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) {
      h[l] = (h[l] ^ static_cast<uint32_t>(tokens[i + l])) * 0x100000001b3ULL;
      h[l] ^= h[l] >> 29;
    }
  }
  for (; i < n; ++i) h[0] = (h[0] ^ static_cast<uint32_t>(tokens[i])) * 0x100000001b3ULL;
  return mix64(h[0] ^ mix64(h[1] + 1) ^ mix64(h[2] + 2) ^ mix64(h[3] + 3) ^ n);
}

// Key of a page given its parent's key (kRootPageKey for the first page): equal keys mean equal
// whole prefixes up to 64-bit chance. Never 0 (the prefix tree's PageKeyMap uses 0 as empty).
inline uint64_t chain_key(uint64_t parent_key, uint64_t page_hash) {
  const uint64_t k = mix64(parent_key ^ (page_hash + kGoldenGamma + (parent_key << 6)));
  return k != 0 ? k : 1;
}

}  // namespace ds
