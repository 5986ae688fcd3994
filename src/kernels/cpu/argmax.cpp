#include "kernels/cpu/argmax.h"

namespace ds::cpu {

int64_t argmax(const float* x, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != x[i]) continue;  // NaN
    if (best < 0 || x[i] > x[best]) best = i;
  }
  return best < 0 ? 0 : best;
}

}  // namespace ds::cpu
