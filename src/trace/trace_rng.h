// TraceRng: the portable random stream of the workload generators (synthetic:, random:): the
// splitmix64 stream of core/hash.h with its own uniform/normal/lognormal draws (no <random>
// distributions, whose outputs differ across standard libraries): same seed => same trace on
// every platform.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hash.h"

namespace ds {

struct TraceRng : SplitMix64 {
  explicit TraceRng(uint64_t seed) : SplitMix64{seed * kGoldenGamma} {}
  double uniform() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  // Integer uniform in [lo, hi] (hi >= lo).
  int64_t uniform_int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double normal() {  // Box-Muller, one value per call
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
};

}  // namespace ds
