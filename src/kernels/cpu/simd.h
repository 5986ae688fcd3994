// Internal to src/kernels/cpu: AVX-512 intrinsics include plus small helpers (bf16 -> f32 loads).
// GCC 12's _mm512_undefined_* self-initialise and trip -W(maybe-)uninitialized at every inlined
// use; those warnings are false positives and are silenced for this header's includers.
#pragma once

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace ds::simd {

// 16 bf16 values (masked) widened exactly to f32.
inline __m512 load_bf16x16(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

inline __mmask16 tail_mask(int64_t n) {
  return __mmask16((1u << n) - 1u);
}  // n in [0, 16]

// exp(x) for 16 lanes, about 1 ulp on [-104, 88.7] (inputs are clamped to it): x = n ln2 + r with
// |r| <= ln2/2, e^r by its degree-7 Taylor polynomial, then scaled by 2^n with vscalefps (so
// results below the normal range become denormals and then 0 instead of garbage).
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);    // ln2 high part
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-06f), r);  // ln2 low part
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// y[i] = exp(x[i]) for n floats (any n).
inline void exp_array(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// silu(x) = x / (1 + exp(-x)) and sigmoid(x) = 1 / (1 + exp(-x)), 16 lanes.
inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
inline __m512 silu16(__m512 x) {
  return _mm512_mul_ps(x, sigmoid16(x));
}

// Σ x[i]² over n floats (f32 lanes, then a tree reduction).
inline float sum_squares(const float* x, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 u = _mm512_loadu_ps(x + i), v = _mm512_loadu_ps(x + i + 16);
    a = _mm512_fmadd_ps(u, u, a);
    b = _mm512_fmadd_ps(v, v, b);
  }
  for (; i < n; i += 16) {
    const __m512 u = _mm512_maskz_loadu_ps(n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i), x + i);
    a = _mm512_fmadd_ps(u, u, a);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a, b));
}

}  // namespace ds::simd
