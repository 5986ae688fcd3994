// Internal to src/kernels/cpu/isa: the 8-lane AVX2 + FMA vector layer of the kernel bodies (same
// names as vec_avx512.h). Included only by kernels_avx2.cpp, inside its target region.
#pragma once

namespace ds::cpu::DS_ISA {

using vf = __m256;
// Register tiling of the bodies (accumulators must fit the register file).
inline constexpr int kGemvTokens = 3;  // activation rows per GEMV tile (x 4 weight rows)
inline constexpr int kGemmRows = 4;    // small_gemm rows of A per micro-tile
inline constexpr int kGemmVecs = 2;    // small_gemm vectors of B per micro-tile
inline constexpr int kGemmNr = 6;      // linear GEMM: weight rows per micro-tile
inline constexpr int kGemmTv = 2;      // linear GEMM: token vectors per micro-tile
inline constexpr int kKdaVecs = 2;     // KDA recurrence tile width in vectors
inline constexpr int64_t kLanes = 8;

inline __m256i lane_mask(int64_t n) {  // all-ones in the first min(n, 8) lanes
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n < 8 ? n : 8)), iota);
}

// Pins v in a register: the compiler may no longer re-read it from memory as an instruction's
// memory operand (used where one load feeds several FMAs).
inline void vkeep(vf& v) {
  asm("" : "+x"(v));
}
inline vf vzero() {
  return _mm256_setzero_ps();
}
inline vf vset1(float a) {
  return _mm256_set1_ps(a);
}
inline vf vload(const float* p) {
  return _mm256_loadu_ps(p);
}
// The first n lanes (n in [0, 8]) from p, zeros above; masked-off lanes are never read.
inline vf vloadn(const float* p, int64_t n) {
  return _mm256_maskload_ps(p, lane_mask(n));
}
inline void vstore(float* p, vf v) {
  _mm256_storeu_ps(p, v);
}
inline void vstoren(float* p, vf v, int64_t n) {
  _mm256_maskstore_ps(p, lane_mask(n), v);
}
// bf16 widened exactly to f32 (the bf16 bits become the high half of the f32 bits).
inline vf vload_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline vf vload_bf16n(const uint16_t* p, int64_t n) {
  alignas(16) uint16_t buf[8] = {};
  for (int64_t i = 0; i < n && i < 8; ++i) buf[i] = p[i];
  return vload_bf16(buf);
}
inline vf vadd(vf a, vf b) {
  return _mm256_add_ps(a, b);
}
inline vf vsub(vf a, vf b) {
  return _mm256_sub_ps(a, b);
}
inline vf vmul(vf a, vf b) {
  return _mm256_mul_ps(a, b);
}
inline vf vdiv(vf a, vf b) {
  return _mm256_div_ps(a, b);
}
inline vf vmax(vf a, vf b) {
  return _mm256_max_ps(a, b);
}
inline vf vmin(vf a, vf b) {
  return _mm256_min_ps(a, b);
}
inline vf vfma(vf a, vf b, vf c) {  // a·b + c, one rounding
  return _mm256_fmadd_ps(a, b, c);
}
inline vf vfnma(vf a, vf b, vf c) {  // c − a·b, one rounding
  return _mm256_fnmadd_ps(a, b, c);
}
inline float vsum(vf a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float vmax_all(vf a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline vf vround(vf a) {  // to nearest, ties to even
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// p · 2^n for integral n in [−150, 128] and p in [0.5, 2): two exact power-of-two factors
// 2^h · 2^(n−h) with h = n >> 1, both normal; only the last product rounds (into a denormal).
inline vf vscale2(vf p, vf n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i h = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const vf f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  const vf f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
}

// In-place transpose of an 8 x 8 block held in 8 vectors: r[j][i] <- r[i][j].
inline void vtranspose(vf* r) {
  vf t[8], u[8];
  for (int p = 0; p < 4; ++p) {
    t[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
  }
  for (int g = 0; g < 2; ++g) {  // u[4g + c], 128-bit lane L: column 4L + c, rows 4g .. 4g + 3
    u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

}  // namespace ds::cpu::DS_ISA
