// Internal to src/kernels: the counter-based uniform numbers of fill_uniform (kernels/elementwise.h),
// one definition for the CPU and the CUDA kernel so that both fill the same values.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define DS_HOST_DEVICE __host__ __device__
#else
#define DS_HOST_DEVICE
#endif

namespace ds {

// u in [-1, 1) from (seed, i): one splitmix64 step, the top 24 bits (exact in f32).
DS_HOST_DEVICE inline float uniform_hash(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace ds
