// Internal to src/kernels/cpu/isa: the KDA compute bodies for one ISA — one value-column tile of
// the recurrence and one head's chunk of the chunked (WY/UT) form. The drivers (kda_recurrent.cpp,
// kda_chunked.cpp) validate, allocate scratch and spread tiles/heads over OpenMP threads.
#pragma once

namespace ds::cpu::DS_ISA {

// ---- recurrence -------------------------------------------------------------------------------
// The recurrence is independent per value column, so one task owns the tile S[:, c0 .. c0 + NV·L)
// (K × NV·L floats, L1-resident) and walks all T tokens. The update of token t and the decay/read
// of token t+1 share one pass over the tile:
//   s = S[j] + k_t[j] u_t;  o_t += scale q_t[j] s;  s *= α_{t+1}[j];  acc_{t+1} += k_{t+1}[j] s
// (u_t = β_t (v_t − acc_t)), so each row is loaded and stored once per token.
template <int NV>
void kda_tile(const KdaDims& d, const KdaTensors& t, float scale, int64_t h, int64_t c0, float* alpha) {
  const int64_t H = d.H, K = d.K, V = d.V;
  float* S = t.S + h * K * V + c0;
  auto row_q = [&](int64_t s) { return t.q + (s * H + h) * K; };
  auto row_k = [&](int64_t s) { return t.k + (s * H + h) * K; };
  auto row_g = [&](int64_t s) { return t.g + (s * H + h) * K; };
  vf acc[NV];
  // Prologue: decay by α_0 and read acc_0 = Sᵀ k_0.
  exp_array(row_g(0), K, alpha);
#pragma GCC unroll 4
  for (int i = 0; i < NV; ++i) acc[i] = vzero();
  {
    const float* k0 = row_k(0);
    for (int64_t j = 0; j < K; ++j) {
      const vf a = vset1(alpha[j]), kj = vset1(k0[j]);
#pragma GCC unroll 4
      for (int i = 0; i < NV; ++i) {
        const vf sv = vmul(vload(S + j * V + kLanes * i), a);
        vstore(S + j * V + kLanes * i, sv);
        acc[i] = vfma(kj, sv, acc[i]);
      }
    }
  }
  for (int64_t s = 0; s < d.T; ++s) {
    const float b = t.beta[s * H + h];
    const float* v = t.v + (s * H + h) * V + c0;
    vf u[NV], o[NV], nacc[NV];
#pragma GCC unroll 4
    for (int i = 0; i < NV; ++i) {
      u[i] = vmul(vset1(b), vsub(vload(v + kLanes * i), acc[i]));
      o[i] = vzero();
      nacc[i] = vzero();
    }
    const float* q = row_q(s);
    const float* k = row_k(s);
    if (s + 1 < d.T) {
      exp_array(row_g(s + 1), K, alpha);
      const float* kn = row_k(s + 1);
      for (int64_t j = 0; j < K; ++j) {
        const vf kj = vset1(k[j]), qj = vset1(q[j]);
        const vf a = vset1(alpha[j]), knj = vset1(kn[j]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) {
          vf sv = vfma(kj, u[i], vload(S + j * V + kLanes * i));
          o[i] = vfma(qj, sv, o[i]);
          sv = vmul(sv, a);
          nacc[i] = vfma(knj, sv, nacc[i]);
          vstore(S + j * V + kLanes * i, sv);
        }
      }
    } else {
      for (int64_t j = 0; j < K; ++j) {
        const vf kj = vset1(k[j]), qj = vset1(q[j]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) {
          const vf sv = vfma(kj, u[i], vload(S + j * V + kLanes * i));
          o[i] = vfma(qj, sv, o[i]);
          vstore(S + j * V + kLanes * i, sv);
        }
      }
    }
    float* out = t.o + (s * H + h) * V + c0;
#pragma GCC unroll 4
    for (int i = 0; i < NV; ++i) {
      vstore(out + kLanes * i, vmul(o[i], vset1(scale)));
      acc[i] = nacc[i];
    }
  }
}

// Value columns [c0, c0 + width) of head h, width a multiple of kLanes and <= kKdaVecs · kLanes.
inline void kda_recurrent_tile(const KdaDims& d, const KdaTensors& t, float scale, int64_t h, int64_t c0,
                               int64_t width, float* alpha) {
  if (width == kKdaVecs * kLanes)
    kda_tile<kKdaVecs>(d, t, scale, h, c0, alpha);
  else
    for (int64_t c = c0; c < c0 + width; c += kLanes) kda_tile<1>(d, t, scale, h, c, alpha);
}

// ---- chunked form -------------------------------------------------------------------------------
// Σ_j a[j] · b[j] · exp(x[j] − y[j]) and Σ_j c[j] · b[j] · exp(x[j] − y[j]) over K.
inline void decayed_dots(const float* a, const float* c, const float* b, const float* x, const float* y,
                         int64_t K, float* out_ab, float* out_cb) {
  vf sa = vzero(), sc = vzero();
  for (int64_t j = 0; j < K; j += kLanes) {
    const int64_t m = K - j;
    const vf e = vmul(vexp(vsub(vloadn(x + j, m), vloadn(y + j, m))), vloadn(b + j, m));
    sa = vfma(vloadn(a + j, m), e, sa);
    sc = vfma(vloadn(c + j, m), e, sc);
  }
  *out_ab = vsum(sa);
  *out_cb = vsum(sc);
}

// out[j] = a[j] · exp(x[j] − y[j]) over K.
inline void decayed_row(const float* a, const float* x, const float* y, int64_t K, float* out) {
  for (int64_t j = 0; j < K; j += kLanes) {
    const int64_t m = K - j;
    vstoren(out + j, vmul(vloadn(a + j, m), vexp(vsub(vloadn(x + j, m), vloadn(y + j, m)))), m);
  }
}

// L[r,i] = Σ_j k_r k_i exp(G_r − G_i) (i < r) and A[r,i] = Σ_j q_r k_i exp(G_r − G_i) (i <= r),
// both n x n row-major, zero above (L: on and above) the diagonal, not yet scaled by β / scale.
// Inside a kKdaSub-row sub-block every pair gets its own exp; across sub-blocks the decay is split
// at the last row e of the earlier block: exp(G_r − G_e) · exp(G_e − G_i), both factors <= 1.
inline void intra_chunk_scores(const KdaHeadRows& x, int64_t n, int64_t K, const KdaChunkScratch& w) {
  const float* G = w.G;
  std::fill(w.L, w.L + n * n, 0.0f);
  std::fill(w.A, w.A + n * n, 0.0f);
  for (int64_t b0 = 0; b0 < n; b0 += kKdaSub) {
    const int64_t b1 = std::min(n, b0 + kKdaSub);
    for (int64_t r = b0; r < b1; ++r)
      for (int64_t i = b0; i <= r; ++i) {
        float lk, lq;
        decayed_dots(x.k + r * x.ldk, x.q + r * x.ldk, x.k + i * x.ldk, G + r * K, G + i * K, K, &lk, &lq);
        if (i < r) w.L[r * n + i] = lk;
        w.A[r * n + i] = lq;
      }
    if (b1 == n) continue;
    // Rows after this block against this block's columns.
    const float* Ge = G + (b1 - 1) * K;
    const int64_t nb = b1 - b0, m = n - b1;
    for (int64_t i = 0; i < nb; ++i)
      decayed_row(x.k + (b0 + i) * x.ldk, Ge, G + (b0 + i) * K, K, w.Kd + i * K);
    for (int64_t j = 0; j < K; ++j)
      for (int64_t i = 0; i < nb; ++i) w.KdT[j * nb + i] = w.Kd[i * K + j];
    for (int64_t r = 0; r < m; ++r) {
      decayed_row(x.k + (b1 + r) * x.ldk, G + (b1 + r) * K, Ge, K, w.Kr + r * K);
      decayed_row(x.q + (b1 + r) * x.ldk, G + (b1 + r) * K, Ge, K, w.Qr + r * K);
    }
    small_gemm(m, nb, K, 1.0f, w.Kr, K, w.KdT, nb, 0.0f, w.L + b1 * n + b0, n);
    small_gemm(m, nb, K, 1.0f, w.Qr, K, w.KdT, nb, 0.0f, w.A + b1 * n + b0, n);
  }
}

// One chunk of n tokens (rows of x) for one head; S f32 [K, V] updated in place; o rows at
// stride ldo. Equations: kda_chunked.cpp.
inline void kda_chunk_head(const KdaHeadRows& x, int64_t n, int64_t K, int64_t V, float scale, float* S,
                           float* o, int64_t ldo, const KdaChunkScratch& w) {
  float* G = w.G;
  float* U = w.U;
  // G = inclusive cumsum of g; Khat = k ⊙ exp(G); Qhat = scale · q ⊙ exp(G).
  for (int64_t r = 0; r < n; ++r) {
    const float* g = x.g + r * x.ldk;
    float* Gr = G + r * K;
    for (int64_t j = 0; j < K; ++j) Gr[j] = (r ? Gr[j - K] : 0.0f) + g[j];
  }
  exp_array(G, n * K, w.Qhat);  // exp(G) staged in Qhat
  for (int64_t r = 0; r < n; ++r) {
    const float *kr = x.k + r * x.ldk, *qr = x.q + r * x.ldk;
    float *kh = w.Khat + r * K, *qh = w.Qhat + r * K;
    for (int64_t j = 0; j < K; ++j) {
      kh[j] = kr[j] * qh[j];
      qh[j] = scale * qr[j] * qh[j];
    }
  }
  // rhs = β ⊙ (V − Khat S0); O = Qhat S0.
  for (int64_t r = 0; r < n; ++r) std::memcpy(U + r * V, x.v + r * x.ldv, size_t(V) * 4);
  small_gemm(n, V, K, -1.0f, w.Khat, K, S, V, 1.0f, U, V);
  for (int64_t r = 0; r < n; ++r) {
    const float b = x.beta[r * x.ldb];
    for (int64_t c = 0; c < V; ++c) U[r * V + c] *= b;
  }
  small_gemm(n, V, K, 1.0f, w.Qhat, K, S, V, 0.0f, o, ldo);
  intra_chunk_scores(x, n, K, w);
  // Ṽ = (I + Diag(β) L)^{-1} rhs by blocked forward substitution.
  for (int64_t b0 = 0; b0 < n; b0 += kKdaSub) {
    const int64_t b1 = std::min(n, b0 + kKdaSub);
    for (int64_t r = b0; r < b1; ++r) {
      const float b = x.beta[r * x.ldb];
      for (int64_t i = 0; i < r; ++i) w.L[r * n + i] *= b;
    }
    if (b0 > 0) small_gemm(b1 - b0, V, b0, -1.0f, w.L + b0 * n, n, U, V, 1.0f, U + b0 * V, V);
    for (int64_t r = b0 + 1; r < b1; ++r)
      for (int64_t i = b0; i < r; ++i) axpy(-w.L[r * n + i], U + i * V, U + r * V, V);
  }
  // O += scale · A Ṽ (A lower-triangular incl. diagonal, zero above).
  for (int64_t b0 = 0; b0 < n; b0 += kKdaSub) {
    const int64_t b1 = std::min(n, b0 + kKdaSub);
    small_gemm(b1 - b0, V, b1, scale, w.A + b0 * n, n, U, V, 1.0f, o + b0 * ldo, ldo);
  }
  // S = Diag(exp(G_n)) S0 + (k ⊙ exp(G_n − G))ᵀ Ṽ.
  const float* Gn = G + (n - 1) * K;
  for (int64_t r = 0; r < n; ++r) decayed_row(x.k + r * x.ldk, Gn, G + r * K, K, w.Kr + r * K);
  for (int64_t j = 0; j < K; ++j)
    for (int64_t r = 0; r < n; ++r) w.Kt[j * n + r] = w.Kr[r * K + j];
  float* eGn = w.Qhat;  // reuse: exp(G_n) into the first row of Qhat
  exp_array(Gn, K, eGn);
  for (int64_t j = 0; j < K; ++j) scale_row(S + j * V, eGn[j], nullptr, V, S + j * V);
  small_gemm(K, V, n, 1.0f, w.Kt, n, U, V, 1.0f, S, V);
}

}  // namespace ds::cpu::DS_ISA
