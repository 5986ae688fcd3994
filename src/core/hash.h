// Integer hash mixing shared by the trace, simulator and replay code. Pure functions.
#pragma once

#include <cstdint>

namespace ds {

// splitmix64 finaliser: a bijection on uint64 with good avalanche.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace ds
