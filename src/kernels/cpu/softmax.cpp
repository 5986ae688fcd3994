#include "kernels/cpu/softmax.h"

#include <cmath>

namespace ds::cpu {

void softmax_rows(const float* x, int64_t rows, int64_t dim, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float m = xr[0];
    for (int64_t i = 1; i < dim; ++i) m = xr[i] > m ? xr[i] : m;
    float sum = 0.0f;
    for (int64_t i = 0; i < dim; ++i) {
      yr[i] = std::exp(xr[i] - m);
      sum += yr[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < dim; ++i) yr[i] *= inv;
  }
}

}  // namespace ds::cpu
