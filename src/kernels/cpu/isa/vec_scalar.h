// Internal to src/kernels/cpu/isa: the portable vector layer of the kernel bodies: eight f32 lanes
// in a plain array, every operation a loop (the compiler may use the baseline SSE2 for them). Same
// names as vec_avx512.h; included only by kernels_scalar.cpp.
#pragma once

namespace ds::cpu::DS_ISA {

// Register tiling of the bodies (accumulators must fit the register file).
inline constexpr int kGemvTokens = 2;  // activation rows per GEMV tile (x 4 weight rows)
inline constexpr int kGemmRows = 4;    // small_gemm rows of A per micro-tile
inline constexpr int kGemmVecs = 2;    // small_gemm vectors of B per micro-tile
inline constexpr int kGemmNr = 4;      // linear GEMM: weight rows per micro-tile
inline constexpr int kGemmTv = 2;      // linear GEMM: token vectors per micro-tile
inline constexpr int kKdaVecs = 2;     // KDA recurrence tile width in vectors
inline constexpr int64_t kLanes = 8;
struct vf {
  float v[kLanes];
};

template <typename F>
inline vf vmap(vf a, F f) {
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = f(a.v[i]);
  return r;
}
template <typename F>
inline vf vmap2(vf a, vf b, F f) {
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = f(a.v[i], b.v[i]);
  return r;
}

// Pins v in a register: the compiler may no longer re-read it from memory as an instruction's
// memory operand (used where one load feeds several FMAs).
inline void vkeep(vf& v) {
  (void)v;
}
inline vf vzero() {
  return vf{};
}
inline vf vset1(float a) {
  vf r;
  for (float& x : r.v) x = a;
  return r;
}
inline vf vload(const float* p) {
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = p[i];
  return r;
}
// The first n lanes (n in [0, 8]) from p, zeros above; never reads past p + n.
inline vf vloadn(const float* p, int64_t n) {
  vf r{};
  for (int64_t i = 0; i < n && i < kLanes; ++i) r.v[i] = p[i];
  return r;
}
inline void vstore(float* p, vf a) {
  for (int i = 0; i < kLanes; ++i) p[i] = a.v[i];
}
inline void vstoren(float* p, vf a, int64_t n) {
  for (int64_t i = 0; i < n && i < kLanes; ++i) p[i] = a.v[i];
}
inline float bf16_bits_to_f32(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline vf vload_bf16(const uint16_t* p) {
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = bf16_bits_to_f32(p[i]);
  return r;
}
inline vf vload_bf16n(const uint16_t* p, int64_t n) {
  vf r{};
  for (int64_t i = 0; i < n && i < kLanes; ++i) r.v[i] = bf16_bits_to_f32(p[i]);
  return r;
}
inline vf vadd(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x + y; });
}
inline vf vsub(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x - y; });
}
inline vf vmul(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x * y; });
}
inline vf vdiv(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x / y; });
}
inline vf vmax(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x > y ? x : y; });
}
inline vf vmin(vf a, vf b) {
  return vmap2(a, b, [](float x, float y) { return x < y ? x : y; });
}
inline vf vfma(vf a, vf b, vf c) {  // a·b + c (two roundings: no FMA instruction in the baseline)
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
  return r;
}
inline vf vfnma(vf a, vf b, vf c) {  // c − a·b
  vf r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = c.v[i] - a.v[i] * b.v[i];
  return r;
}
inline float vsum(vf a) {  // pairwise, as the vector reductions
  float s[kLanes / 2];
  for (int i = 0; i < kLanes / 2; ++i) s[i] = a.v[i] + a.v[i + kLanes / 2];
  return (s[0] + s[2]) + (s[1] + s[3]);
}
inline float vmax_all(vf a) {
  float m = a.v[0];
  for (int i = 1; i < kLanes; ++i) m = a.v[i] > m ? a.v[i] : m;
  return m;
}
inline vf vround(vf a) {  // to nearest, ties to even (the default rounding mode)
  return vmap(a, [](float x) { return std::nearbyint(x); });
}
// p · 2^n for integral n in [−150, 128] and p in [0.5, 2): two exact power-of-two factors, as
// vec_avx2.h.
inline vf vscale2(vf p, vf n) {
  vf r;
  for (int i = 0; i < kLanes; ++i) {
    const int32_t ni = int32_t(n.v[i]), h = ni >> 1;
    const uint32_t b1 = uint32_t(h + 127) << 23, b2 = uint32_t(ni - h + 127) << 23;
    float f1, f2;
    std::memcpy(&f1, &b1, 4);
    std::memcpy(&f2, &b2, 4);
    r.v[i] = p.v[i] * f1 * f2;
  }
  return r;
}

// In-place transpose of a kLanes x kLanes block held in kLanes vectors: r[j][i] <- r[i][j].
inline void vtranspose(vf* r) {
  for (int i = 0; i < kLanes; ++i)
    for (int j = i + 1; j < kLanes; ++j) {
      const float a = r[i].v[j];
      r[i].v[j] = r[j].v[i];
      r[j].v[i] = a;
    }
}

}  // namespace ds::cpu::DS_ISA
