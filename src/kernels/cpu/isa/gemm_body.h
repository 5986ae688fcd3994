// Internal to src/kernels/cpu/isa: the GEMM body of linear() (T > kLinearGemvMaxRows) for one ISA:
// y[t, n] (+)= Σ_k x[t, k] · w[n, k] for the output features [n_begin, n_end) of one thread.
// Vector lanes run along tokens: per block of kGemmKc inputs and kGemmTb tokens, x is transposed
// once into xT [k][t] (L2-resident); per group of kGemmNr weight rows, the rows are widened to f32
// into Wb [kGemmNr][kWbStride] (bf16 converted once per block, read as one contiguous run when
// the block spans all inputs). The micro-tile holds kGemmNr × kGemmTv vector accumulators
// (features × token vectors): one weight broadcast feeds kGemmTv FMAs. It is transposed in
// registers and stored as kGemmNr contiguous features per token row.
#pragma once

namespace ds::cpu::DS_ISA {

static_assert(kGemmNr <= kLanes, "a micro-tile's features must fit one vector after the transpose");
inline constexpr int64_t kGemmTt = kGemmTv * kLanes;  // tokens per micro-tile
inline constexpr int64_t kWbStride = kGemmKc + 16;    // padded: Wb rows do not alias in L1

// xT[k * tpad + t] = x[(t0 + t) * xs + k0 + k] for k < kc, t < nt; zero for nt <= t < tpad.
// tpad is a multiple of kLanes.
inline void gemm_pack_xt(const float* x, int64_t xs, int64_t t0, int64_t nt, int64_t k0, int64_t kc,
                         int64_t tpad, float* xT) {
  vf r[kLanes];
  for (int64_t t = 0; t < tpad; t += kLanes) {
    for (int64_t k = 0; k < kc; k += kLanes) {
      const int64_t m = std::min(kLanes, kc - k);
      for (int64_t i = 0; i < kLanes; ++i)
        r[i] = t + i < nt ? vloadn(x + (t0 + t + i) * xs + k0 + k, m) : vzero();
      vtranspose(r);
      for (int64_t j = 0; j < m; ++j) vstore(xT + (k + j) * tpad + t, r[j]);
    }
  }
}

// Wb[i * kWbStride + k] = w[(n0 + i) * K + k0 + k] as f32 for i < nr, k < kc; rows nr.. are zero.
template <typename WT>
inline void gemm_pack_w(const WT* w, int64_t K, int64_t n0, int64_t nr, int64_t k0, int64_t kc, float* Wb) {
  for (int64_t i = 0; i < kGemmNr; ++i) {
    float* dst = Wb + i * kWbStride;
    if (i >= nr) {
      std::fill(dst, dst + kc, 0.0f);
      continue;
    }
    const WT* src = w + (n0 + i) * K + k0;
    int64_t k = 0;
    for (; k + kLanes <= kc; k += kLanes) vstore(dst + k, wload(src + k));
    if (k < kc) vstoren(dst + k, wloadn(src + k, kc - k), kc - k);
  }
}

// y[t, i] (+)= Σ_k Wb[i][k] · xT[k][t] for i < nr (<= kGemmNr) and t < nt (<= kGemmTt); y points
// at the tile's first token row and feature.
inline void gemm_micro(int64_t kc, const float* Wb, const float* xT, int64_t tpad, float* y, int64_t ys,
                       int64_t nr, int64_t nt, bool add) {
  vf acc[kGemmNr][kGemmTv];
#pragma GCC unroll 16
  for (int i = 0; i < kGemmNr; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kGemmTv; ++v) acc[i][v] = vzero();
  for (int64_t k = 0; k < kc; ++k) {
    vf xv[kGemmTv];
#pragma GCC unroll 4
    for (int v = 0; v < kGemmTv; ++v) xv[v] = vload(xT + k * tpad + v * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kGemmNr; ++i) {
      const vf a = vset1(Wb[i * kWbStride + k]);
#pragma GCC unroll 4
      for (int v = 0; v < kGemmTv; ++v) acc[i][v] = vfma(a, xv[v], acc[i][v]);
    }
  }
  // Per token vector: features x tokens -> tokens x features, then one (masked) row store per token.
  for (int v = 0; v < kGemmTv && v * kLanes < nt; ++v) {
    vf r[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) r[i] = i < kGemmNr ? acc[i][v] : vzero();
    vtranspose(r);
    const int64_t n_tok = std::min<int64_t>(kLanes, nt - v * kLanes);
    for (int64_t t = 0; t < n_tok; ++t) {
      float* yt = y + (v * kLanes + t) * ys;
      vstoren(yt, add ? vadd(r[t], vloadn(yt, nr)) : r[t], nr);
    }
  }
}

// Floats of scratch gemm_rows_t needs.
inline int64_t gemm_scratch_floats() {
  return kGemmKc * kGemmTb + kGemmNr * kWbStride;
}

template <typename WT>
void gemm_rows_t(const float* x, int64_t xs, int64_t T, const WT* w, int64_t K, int64_t n_begin,
                 int64_t n_end, float* y, int64_t ys, bool acc, float* scratch) {
  float* xT = scratch;
  float* Wb = xT + kGemmKc * kGemmTb;
  for (int64_t k0 = 0; k0 < K; k0 += kGemmKc) {
    const int64_t kc = std::min(kGemmKc, K - k0);
    const bool add = acc || k0 > 0;
    for (int64_t t0 = 0; t0 < T; t0 += kGemmTb) {
      const int64_t nt = std::min(kGemmTb, T - t0);
      const int64_t tpad = (nt + kGemmTt - 1) / kGemmTt * kGemmTt;
      gemm_pack_xt(x, xs, t0, nt, k0, kc, tpad, xT);
      for (int64_t n0 = n_begin; n0 < n_end; n0 += kGemmNr) {
        const int64_t nr = std::min<int64_t>(kGemmNr, n_end - n0);
        gemm_pack_w(w, K, n0, nr, k0, kc, Wb);
        for (int64_t tt = 0; tt < nt; tt += kGemmTt)
          gemm_micro(kc, Wb, xT + tt, tpad, y + (t0 + tt) * ys + n0, ys, nr, std::min(kGemmTt, nt - tt), add);
      }
    }
  }
}

inline void gemm_bf16(const float* x, int64_t xs, int64_t T, const uint16_t* w, int64_t K, int64_t n_begin,
                      int64_t n_end, float* y, int64_t ys, bool acc, float* scratch) {
  gemm_rows_t(x, xs, T, w, K, n_begin, n_end, y, ys, acc, scratch);
}
inline void gemm_f32(const float* x, int64_t xs, int64_t T, const float* w, int64_t K, int64_t n_begin,
                     int64_t n_end, float* y, int64_t ys, bool acc, float* scratch) {
  gemm_rows_t(x, xs, T, w, K, n_begin, n_end, y, ys, acc, scratch);
}

}  // namespace ds::cpu::DS_ISA
