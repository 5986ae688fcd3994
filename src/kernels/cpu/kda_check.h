// Internal to src/kernels/cpu: argument validation shared by the KDA kernels.
#pragma once

#include "core/check.h"
#include "kernels/cpu/kda.h"

namespace ds::cpu {

inline void kda_check_args(const KdaDims& d, const KdaTensors& t) {
  DS_CHECK(d.T >= 0 && d.H > 0 && d.K > 0 && d.V > 0, "kda: bad dims T={} H={} K={} V={}", d.T, d.H, d.K,
           d.V);
  DS_CHECK(t.S != nullptr, "kda: null state");
  DS_CHECK(d.T == 0 || (t.q && t.k && t.v && t.g && t.beta && t.o), "kda: null input/output for T={}", d.T);
}

}  // namespace ds::cpu
