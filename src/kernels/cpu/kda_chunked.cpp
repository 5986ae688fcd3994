// Chunked KDA prefill (model-spec §4): per head and chunk of C tokens, the pseudo-values
// Ṽ = (I + L)^{-1} · β ⊙ (V − K̂ S0) are found by forward substitution on the right-hand side
// (no explicit inverse), then O = Q̂ S0 + A_qk Ṽ and S ← Diag(γ_C) S0 + (k ⊙ exp(G_C − G))ᵀ Ṽ.
// Every exponent is a difference G_r − G_i with r ≥ i, so it is ≤ 0: no overflow for any gate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_check.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/small_gemm.h"

namespace ds {

namespace {

constexpr int64_t kSub = 16;  // sub-block rows: exact pairwise decay inside, factored across

// Scratch for one head's chunk (chunk C, dims K, V); reused across chunks by one thread.
struct ChunkScratch {
  std::vector<float> G, Khat, Qhat, U, L, A, Kd, KdT, Kr, Qr, Kt;
  ChunkScratch(int64_t C, int64_t K, int64_t V)
      : G(size_t(C * K)),
        Khat(size_t(C * K)),
        Qhat(size_t(C * K)),
        U(size_t(C * V)),
        L(size_t(C * C)),
        A(size_t(C * C)),
        Kd(size_t(kSub * K)),
        KdT(size_t(K * kSub)),
        Kr(size_t(C * K)),
        Qr(size_t(C * K)),
        Kt(size_t(K * C)) {}
};

// Row views of one head inside the [T, H, D] inputs.
struct HeadRows {
  const float *q, *k, *v, *g, *beta;
  int64_t ldk, ldv, ldb;  // row strides of q/k/g, v, beta (elements)
};

// Σ_j a[j] · b[j] · exp(x[j] − y[j]) and Σ_j c[j] · b[j] · exp(x[j] − y[j]) over K.
inline void decayed_dots(const float* a, const float* c, const float* b, const float* x, const float* y,
                         int64_t K, float* out_ab, float* out_cb) {
  __m512 sa = _mm512_setzero_ps(), sc = _mm512_setzero_ps();
  for (int64_t j = 0; j < K; j += 16) {
    const __mmask16 m = K - j >= 16 ? __mmask16(0xffff) : simd::tail_mask(K - j);
    const __m512 e = _mm512_mul_ps(
        simd::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, y + j))),
        _mm512_maskz_loadu_ps(m, b + j));
    sa = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j), e, sa);
    sc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c + j), e, sc);
  }
  *out_ab = _mm512_reduce_add_ps(sa);
  *out_cb = _mm512_reduce_add_ps(sc);
}

// out[j] = a[j] · exp(x[j] − y[j]) over K.
inline void decayed_row(const float* a, const float* x, const float* y, int64_t K, float* out) {
  for (int64_t j = 0; j < K; j += 16) {
    const __mmask16 m = K - j >= 16 ? __mmask16(0xffff) : simd::tail_mask(K - j);
    const __m512 e =
        simd::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, y + j)));
    _mm512_mask_storeu_ps(out + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + j), e));
  }
}

// L[r,i] = Σ_j k_r k_i exp(G_r − G_i) (i < r) and A[r,i] = Σ_j q_r k_i exp(G_r − G_i) (i <= r),
// both n x n row-major, zero above (L: on and above) the diagonal, not yet scaled by β / scale.
// Inside a 16-row sub-block every pair gets its own exp; across sub-blocks the decay is split at
// the last row e of the earlier block: exp(G_r − G_e) · exp(G_e − G_i), both factors <= 1.
void intra_chunk_scores(const HeadRows& x, int64_t n, int64_t K, ChunkScratch& w) {
  const float* G = w.G.data();
  std::fill(w.L.begin(), w.L.begin() + n * n, 0.0f);
  std::fill(w.A.begin(), w.A.begin() + n * n, 0.0f);
  for (int64_t b0 = 0; b0 < n; b0 += kSub) {
    const int64_t b1 = std::min(n, b0 + kSub);
    for (int64_t r = b0; r < b1; ++r)
      for (int64_t i = b0; i <= r; ++i) {
        float lk, lq;
        decayed_dots(x.k + r * x.ldk, x.q + r * x.ldk, x.k + i * x.ldk, G + r * K, G + i * K, K, &lk, &lq);
        if (i < r) w.L[size_t(r * n + i)] = lk;
        w.A[size_t(r * n + i)] = lq;
      }
    if (b1 == n) continue;
    // Rows after this block against this block's columns.
    const float* Ge = G + (b1 - 1) * K;
    const int64_t nb = b1 - b0, m = n - b1;
    for (int64_t i = 0; i < nb; ++i)
      decayed_row(x.k + (b0 + i) * x.ldk, Ge, G + (b0 + i) * K, K, w.Kd.data() + i * K);
    for (int64_t j = 0; j < K; ++j)
      for (int64_t i = 0; i < nb; ++i) w.KdT[size_t(j * nb + i)] = w.Kd[size_t(i * K + j)];
    for (int64_t r = 0; r < m; ++r) {
      decayed_row(x.k + (b1 + r) * x.ldk, G + (b1 + r) * K, Ge, K, w.Kr.data() + r * K);
      decayed_row(x.q + (b1 + r) * x.ldk, G + (b1 + r) * K, Ge, K, w.Qr.data() + r * K);
    }
    small_gemm(m, nb, K, 1.0f, w.Kr.data(), K, w.KdT.data(), nb, 0.0f, w.L.data() + b1 * n + b0, n);
    small_gemm(m, nb, K, 1.0f, w.Qr.data(), K, w.KdT.data(), nb, 0.0f, w.A.data() + b1 * n + b0, n);
  }
}

// One chunk of n tokens (rows of x) for one head; S f32 [K, V] updated in place; o rows at
// stride ldo. See the file comment for the equations.
void kda_chunk_head(const HeadRows& x, int64_t n, int64_t K, int64_t V, float scale, float* S, float* o,
                    int64_t ldo, ChunkScratch& w) {
  float* G = w.G.data();
  float* U = w.U.data();
  // G = inclusive cumsum of g; Khat = k ⊙ exp(G); Qhat = scale · q ⊙ exp(G).
  for (int64_t r = 0; r < n; ++r) {
    const float* g = x.g + r * x.ldk;
    float* Gr = G + r * K;
    for (int64_t j = 0; j < K; ++j) Gr[j] = (r ? Gr[j - K] : 0.0f) + g[j];
  }
  simd::exp_array(G, n * K, w.Qhat.data());  // exp(G) staged in Qhat
  for (int64_t r = 0; r < n; ++r) {
    const float *kr = x.k + r * x.ldk, *qr = x.q + r * x.ldk;
    float *kh = w.Khat.data() + r * K, *qh = w.Qhat.data() + r * K;
    for (int64_t j = 0; j < K; ++j) {
      kh[j] = kr[j] * qh[j];
      qh[j] = scale * qr[j] * qh[j];
    }
  }
  // rhs = β ⊙ (V − Khat S0); O = Qhat S0.
  for (int64_t r = 0; r < n; ++r) std::memcpy(U + r * V, x.v + r * x.ldv, size_t(V) * 4);
  small_gemm(n, V, K, -1.0f, w.Khat.data(), K, S, V, 1.0f, U, V);
  for (int64_t r = 0; r < n; ++r) {
    const float b = x.beta[r * x.ldb];
    for (int64_t c = 0; c < V; ++c) U[r * V + c] *= b;
  }
  small_gemm(n, V, K, 1.0f, w.Qhat.data(), K, S, V, 0.0f, o, ldo);
  intra_chunk_scores(x, n, K, w);
  // Ṽ = (I + Diag(β) L)^{-1} rhs by blocked forward substitution.
  for (int64_t b0 = 0; b0 < n; b0 += kSub) {
    const int64_t b1 = std::min(n, b0 + kSub);
    for (int64_t r = b0; r < b1; ++r) {
      const float b = x.beta[r * x.ldb];
      for (int64_t i = 0; i < r; ++i) w.L[size_t(r * n + i)] *= b;
    }
    if (b0 > 0) small_gemm(b1 - b0, V, b0, -1.0f, w.L.data() + b0 * n, n, U, V, 1.0f, U + b0 * V, V);
    for (int64_t r = b0 + 1; r < b1; ++r)
      for (int64_t i = b0; i < r; ++i) {
        const float l = w.L[size_t(r * n + i)];
        const float* ui = U + i * V;
        float* ur = U + r * V;
        for (int64_t c = 0; c < V; ++c) ur[c] -= l * ui[c];
      }
  }
  // O += scale · A Ṽ (A lower-triangular incl. diagonal, zero above).
  for (int64_t b0 = 0; b0 < n; b0 += kSub) {
    const int64_t b1 = std::min(n, b0 + kSub);
    small_gemm(b1 - b0, V, b1, scale, w.A.data() + b0 * n, n, U, V, 1.0f, o + b0 * ldo, ldo);
  }
  // S = Diag(exp(G_n)) S0 + (k ⊙ exp(G_n − G))ᵀ Ṽ.
  const float* Gn = G + (n - 1) * K;
  for (int64_t r = 0; r < n; ++r) decayed_row(x.k + r * x.ldk, Gn, G + r * K, K, w.Kr.data() + r * K);
  for (int64_t j = 0; j < K; ++j)
    for (int64_t r = 0; r < n; ++r) w.Kt[size_t(j * n + r)] = w.Kr[size_t(r * K + j)];
  const float* eGn = w.Qhat.data();  // reuse: exp(G_n) into the first row of Qhat
  simd::exp_array(Gn, K, w.Qhat.data());
  for (int64_t j = 0; j < K; ++j) {
    float* Sj = S + j * V;
    for (int64_t c = 0; c < V; ++c) Sj[c] *= eGn[j];
  }
  small_gemm(K, V, n, 1.0f, w.Kt.data(), n, U, V, 1.0f, S, V);
}

void check_emit(const KdaDims& d, int64_t chunk, std::span<const int64_t> emit_at,
                std::span<float* const> emit_states) {
  DS_CHECK(chunk >= 1 && chunk <= 1024, "kda_chunked: chunk size {} outside [1, 1024]", chunk);
  DS_CHECK(emit_at.size() == emit_states.size(), "kda_chunked: {} emit positions but {} state buffers",
           emit_at.size(), emit_states.size());
  for (size_t i = 0; i < emit_at.size(); ++i) {
    const int64_t p = emit_at[i];
    DS_CHECK(p > 0 && p <= d.T, "kda_chunked: emit position {} outside (0, T={}]", p, d.T);
    DS_CHECK(p % chunk == 0 || p == d.T,
             "kda_chunked: emit position {} is neither a multiple of chunk {} nor T={}", p, chunk, d.T);
    DS_CHECK(i == 0 || p > emit_at[i - 1], "kda_chunked: emit positions not increasing at {} ({})", i, p);
    DS_CHECK(emit_states[i] != nullptr, "kda_chunked: null state buffer for position {}", p);
  }
}

}  // namespace

void kda_chunked(const KdaDims& d, const KdaTensors& t, float scale, int64_t chunk,
                 std::span<const int64_t> emit_at, std::span<float* const> emit_states) {
  kda_check_args(d, t);
  check_emit(d, chunk, emit_at, emit_states);
  const int64_t KV = d.K * d.V;
#pragma omp parallel for schedule(static) if (d.H > 1 && d.T > 0)
  for (int64_t h = 0; h < d.H; ++h) {
    ChunkScratch w(std::min(chunk, std::max<int64_t>(d.T, 1)), d.K, d.V);
    float* S = t.S + h * KV;
    size_t next = 0;
    for (int64_t s0 = 0; s0 < d.T; s0 += chunk) {
      const int64_t n = std::min(chunk, d.T - s0);
      const int64_t row = s0 * d.H + h;
      const HeadRows x{t.q + row * d.K, t.k + row * d.K, t.v + row * d.V, t.g + row * d.K,
                       t.beta + row,    d.H * d.K,       d.H * d.V,       d.H};
      kda_chunk_head(x, n, d.K, d.V, scale, S, t.o + row * d.V, d.H * d.V, w);
      if (next < emit_at.size() && emit_at[next] == s0 + n) {
        std::memcpy(emit_states[next] + h * KV, S, size_t(KV) * sizeof(float));
        ++next;
      }
    }
  }
}

}  // namespace ds
