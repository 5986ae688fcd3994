#include "kernels/cpu/activation.h"

#include "kernels/cpu/simd.h"

namespace ds {

namespace {
template <typename F>
void map16(const float* x, int64_t n, float* y, F f) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : simd::tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
}  // namespace

void silu(const float* x, int64_t n, float* y) {
  map16(x, n, y, simd::silu16);
}

void sigmoid(const float* x, int64_t n, float* y) {
  map16(x, n, y, simd::sigmoid16);
}

void softplus(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = softplusf(x[i]);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : simd::tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(simd::silu16(g), u));
  }
}

}  // namespace ds
