#include "kernels/cpu/norm.h"

#include <cmath>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/simd.h"

namespace ds {

namespace {
// 1 / sqrt(mean(x²) + eps) with an f32 sum, as torch does in f32 (pairwise order differs only by
// rounding).
float rms_scale(const float* x, int64_t dim, float eps) {
  return 1.0f / std::sqrt(simd::sum_squares(x, dim) / float(dim) + eps);
}
}  // namespace

void rmsnorm(const float* x, int64_t rows, int64_t dim, const float* weight, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    const float s = rms_scale(xr, dim, eps);
    if (weight) {
      for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * s * weight[i];
    } else {
      for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * s;
    }
  }
}

void rmsnorm_gated_sigmoid(const float* x, const float* gate, int64_t rows, int64_t dim, const float* weight,
                           float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* gr = gate + r * dim;
    float* yr = y + r * dim;
    const float s = rms_scale(xr, dim, eps);
    for (int64_t i = 0; i < dim; i += 16) {
      const __mmask16 m = dim - i >= 16 ? __mmask16(0xffff) : simd::tail_mask(dim - i);
      const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), _mm512_set1_ps(s));
      const __m512 gw = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, weight + i),
                                      simd::sigmoid16(_mm512_maskz_loadu_ps(m, gr + i)));
      _mm512_mask_storeu_ps(yr + i, m, _mm512_mul_ps(v, gw));
    }
  }
}

void l2norm_rows(float* x, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * dim;
    const float s = 1.0f / std::sqrt(simd::sum_squares(xr, dim) + eps);
    for (int64_t i = 0; i < dim; ++i) xr[i] *= s;
  }
}

}  // namespace ds
