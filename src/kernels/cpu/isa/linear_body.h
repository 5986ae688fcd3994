// Internal to src/kernels/cpu/isa: the GEMV body of linear() for one ISA. Output rows are taken in
// blocks of 4; each block is read from memory once and multiplied with kGemvTokens activation rows
// at a time (4 × kGemvTokens vector accumulators), bf16 weights widened exactly to f32 and
// multiplied with f32 FMA, so results match an f32 GEMM up to the summation order.
#pragma once

namespace ds::cpu::DS_ISA {

inline vf wload(const uint16_t* p) {
  return vload_bf16(p);
}
inline vf wload(const float* p) {
  return vload(p);
}
inline vf wloadn(const uint16_t* p, int64_t n) {
  return vload_bf16n(p, n);
}
inline vf wloadn(const float* p, int64_t n) {
  return vloadn(p, n);
}

inline constexpr int64_t kGemvPrefetchBytes = 8192;  // software prefetch distance of the weight stream

inline void put(float* dst, float s, bool acc) {
  *dst = acc ? *dst + s : s;
}

// y[t, r] (+)= x[t, :] · w[r, :] for R weight rows (stride cols) and NT activation rows.
// pf (or nullptr): R rows (stride cols) to prefetch into cache while this tile streams its own, so
// the memory stream does not stop while later tiles of the block compute from cache.
template <int R, int NT, typename WT>
inline void gemv_tile(const float* x, int64_t xs, const WT* w, int64_t cols, float* y, int64_t ys, bool acc,
                      const WT* pf = nullptr) {
  vf a[R][NT];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) a[r][t] = vzero();
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    if (pf)
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) __builtin_prefetch(pf + r * cols + c, 0, 1);
    vf xv[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      xv[t] = vload(x + t * xs + c);
      if constexpr (R > 1) vkeep(xv[t]);  // one load for R FMAs, not R folded loads
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const vf wv = wload(w + r * cols + c);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) a[r][t] = vfma(wv, xv[t], a[r][t]);
    }
  }
  if (c < cols) {
    const int64_t m = cols - c;
    vf xv[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) xv[t] = vloadn(x + t * xs + c, m);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const vf wv = wloadn(w + r * cols + c, m);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) a[r][t] = vfma(wv, xv[t], a[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < NT; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) put(y + t * ys + r, vsum(a[r][t]), acc);
}

// One activation row against 4 weight rows with two independent FMA chains per row (T = 1 is
// bandwidth-bound: this keeps enough loads in flight).
template <typename WT>
inline void gemv_tile_4x1(const float* x, const WT* w, int64_t cols, float* y, bool acc,
                          const WT* pf = nullptr) {
  vf a[4], b[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) a[r] = b[r] = vzero();
  int64_t c = 0;
  for (; c + 2 * kLanes <= cols; c += 2 * kLanes) {
    if (pf)
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) __builtin_prefetch(pf + r * cols + c, 0, 1);
    const vf v = vload(x + c), u = vload(x + c + kLanes);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      a[r] = vfma(wload(w + r * cols + c), v, a[r]);
      b[r] = vfma(wload(w + r * cols + c + kLanes), u, b[r]);
    }
  }
  for (; c < cols; c += kLanes) {
    const int64_t m = cols - c;
    const vf v = vloadn(x + c, m);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) a[r] = vfma(wloadn(w + r * cols + c, m), v, a[r]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) put(y + r, vsum(vadd(a[r], b[r])), acc);
}

// Weight rows [r, r + 4) against activation rows [t, t + n), n < kGemvTokens, in one tile.
template <typename WT>
inline void gemv_tail_tile(const float* x, int64_t xs, int64_t n, const WT* w, int64_t cols, float* y,
                           int64_t ys, bool acc, const WT* pf) {
  if constexpr (kGemvTokens > 1) {
    if (n == 1) return gemv_tile_4x1(x, w, cols, y, acc, pf);
  }
  if constexpr (kGemvTokens > 2) {
    if (n == 2) return gemv_tile<4, 2>(x, xs, w, cols, y, ys, acc, pf);
  }
  if constexpr (kGemvTokens > 3) {
    if (n == 3) return gemv_tile<4, 3>(x, xs, w, cols, y, ys, acc, pf);
  }
  if constexpr (kGemvTokens > 4) {
    if (n == 4) return gemv_tile<4, 4>(x, xs, w, cols, y, ys, acc, pf);
  }
  if constexpr (kGemvTokens > 5) {
    if (n == 5) return gemv_tile<4, 5>(x, xs, w, cols, y, ys, acc, pf);
  }
  for (int64_t t = 0; t < n; ++t) gemv_tile_4x1(x + t * xs, w, cols, y + t * ys, acc, t == 0 ? pf : nullptr);
}

// Output rows [r0, r1) for all T activation rows: full tiles of kGemvTokens rows, then one tile
// for the rest, so every 4-row weight block is streamed from memory once.
template <typename WT>
void gemv_rows(const float* x, int64_t xs, int64_t T, const WT* w, int64_t cols, int64_t r0, int64_t r1,
               float* y, int64_t ys, bool acc) {
  int64_t r = r0;
  const int64_t t_full = T / kGemvTokens * kGemvTokens;
  // The first tile of each block prefetches the block kGemvPrefetchBytes ahead (at least the next).
  const int64_t ahead = std::max<int64_t>(4, kGemvPrefetchBytes / (cols * int64_t(sizeof(WT))) / 4 * 4);
  for (; r + 4 <= r1; r += 4) {
    const WT* wr = w + r * cols;
    const WT* pf = r + ahead + 4 <= r1 ? wr + ahead * cols : nullptr;
    for (int64_t t = 0; t < t_full; t += kGemvTokens)
      gemv_tile<4, kGemvTokens>(x + t * xs, xs, wr, cols, y + t * ys + r, ys, acc, t == 0 ? pf : nullptr);
    if (t_full < T)
      gemv_tail_tile(x + t_full * xs, xs, T - t_full, wr, cols, y + t_full * ys + r, ys, acc,
                     t_full == 0 ? pf : nullptr);
  }
  for (; r < r1; ++r)
    for (int64_t t = 0; t < T; ++t)
      gemv_tile<1, 1>(x + t * xs, xs, w + r * cols, cols, y + t * ys + r, ys, acc);
}

inline void gemv_bf16(const float* x, int64_t xs, int64_t T, const uint16_t* w, int64_t cols, int64_t r0,
                      int64_t r1, float* y, int64_t ys, bool acc) {
  gemv_rows(x, xs, T, w, cols, r0, r1, y, ys, acc);
}
inline void gemv_f32(const float* x, int64_t xs, int64_t T, const float* w, int64_t cols, int64_t r0,
                     int64_t r1, float* y, int64_t ys, bool acc) {
  gemv_rows(x, xs, T, w, cols, r0, r1, y, ys, acc);
}

}  // namespace ds::cpu::DS_ISA
