// Internal to src/kernels/cpu/isa: the 16-lane AVX-512 vector layer of the kernel bodies. Included
// only by kernels_avx512.cpp, inside its target region and with DS_ISA defined (see kernel_table.h).
// Every ISA's vec_*.h defines the same names, so one kernel body compiles for each of them.
#pragma once

namespace ds::cpu::DS_ISA {

using vf = __m512;
// Register tiling of the bodies (accumulators must fit the register file).
inline constexpr int kGemvTokens = 6;  // activation rows per GEMV tile (x 4 weight rows)
inline constexpr int kGemmRows = 4;    // small_gemm rows of A per micro-tile
inline constexpr int kGemmVecs = 4;    // small_gemm vectors of B per micro-tile
inline constexpr int kGemmNr = 12;     // linear GEMM: weight rows per micro-tile
inline constexpr int kGemmTv = 2;      // linear GEMM: token vectors per micro-tile
inline constexpr int kKdaVecs = 2;     // KDA recurrence tile width in vectors
inline constexpr int64_t kLanes = 16;

inline __mmask16 lane_mask(int64_t n) {  // the first min(n, 16) lanes
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
}

// Pins v in a register: the compiler may no longer re-read it from memory as an instruction's
// memory operand (used where one load feeds several FMAs).
inline void vkeep(vf& v) {
  asm("" : "+v"(v));
}
inline vf vzero() {
  return _mm512_setzero_ps();
}
inline vf vset1(float a) {
  return _mm512_set1_ps(a);
}
inline vf vload(const float* p) {
  return _mm512_loadu_ps(p);
}
// The first n lanes (n in [0, 16]) from p, zeros above; never reads past p + n.
inline vf vloadn(const float* p, int64_t n) {
  return _mm512_maskz_loadu_ps(lane_mask(n), p);
}
inline void vstore(float* p, vf v) {
  _mm512_storeu_ps(p, v);
}
inline void vstoren(float* p, vf v, int64_t n) {
  _mm512_mask_storeu_ps(p, lane_mask(n), v);
}
// bf16 widened exactly to f32 (the bf16 bits become the high half of the f32 bits).
inline vf vload_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline vf vload_bf16n(const uint16_t* p, int64_t n) {
  const __m256i h = _mm256_maskz_loadu_epi16(lane_mask(n), p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline vf vadd(vf a, vf b) {
  return _mm512_add_ps(a, b);
}
inline vf vsub(vf a, vf b) {
  return _mm512_sub_ps(a, b);
}
inline vf vmul(vf a, vf b) {
  return _mm512_mul_ps(a, b);
}
inline vf vdiv(vf a, vf b) {
  return _mm512_div_ps(a, b);
}
inline vf vmax(vf a, vf b) {
  return _mm512_max_ps(a, b);
}
inline vf vmin(vf a, vf b) {
  return _mm512_min_ps(a, b);
}
inline vf vfma(vf a, vf b, vf c) {  // a·b + c, one rounding
  return _mm512_fmadd_ps(a, b, c);
}
inline vf vfnma(vf a, vf b, vf c) {  // c − a·b, one rounding
  return _mm512_fnmadd_ps(a, b, c);
}
inline float vsum(vf a) {
  return _mm512_reduce_add_ps(a);
}
inline float vmax_all(vf a) {
  return _mm512_reduce_max_ps(a);
}
inline vf vround(vf a) {  // to nearest, ties to even
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// p · 2^n for integral n in [−150, 128]; vscalefps rounds once, so results below the normal range
// become correctly rounded denormals and then 0.
inline vf vscale2(vf p, vf n) {
  return _mm512_scalef_ps(p, n);
}

// In-place transpose of a 16 x 16 block held in 16 vectors: r[j][i] <- r[i][j].
inline void vtranspose(vf* r) {
  vf t[16], u[16];
  for (int p = 0; p < 8; ++p) {
    t[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
  }
  for (int g = 0; g < 4; ++g) {  // u[4g + c], 128-bit lane L: column 4L + c, rows 4g .. 4g + 3
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    const vf v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), v4 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    const vf v8 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const vf v12 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_f32x4(v0, v8, 0x88);
    r[c + 8] = _mm512_shuffle_f32x4(v0, v8, 0xdd);
    r[c + 4] = _mm512_shuffle_f32x4(v4, v12, 0x88);
    r[c + 12] = _mm512_shuffle_f32x4(v4, v12, 0xdd);
  }
}

}  // namespace ds::cpu::DS_ISA
