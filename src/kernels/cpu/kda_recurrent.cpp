// KDA per-token recurrence (model-spec §3.3): the oracle and a decode-optimised variant.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_check.h"
#include "kernels/cpu/simd.h"

namespace ds {

void kda_recurrent_ref(const KdaDims& d, const KdaTensors& t, float scale) {
  kda_check_args(d, t);
  const int64_t H = d.H, K = d.K, V = d.V;
  std::vector<float> e(static_cast<size_t>(V));
  for (int64_t h = 0; h < H; ++h) {
    float* S = t.S + h * K * V;
    for (int64_t s = 0; s < d.T; ++s) {
      const float* q = t.q + (s * H + h) * K;
      const float* k = t.k + (s * H + h) * K;
      const float* g = t.g + (s * H + h) * K;
      const float* v = t.v + (s * H + h) * V;
      const float b = t.beta[s * H + h];
      float* o = t.o + (s * H + h) * V;
      // 1. S <- Diag(exp(g)) S
      for (int64_t j = 0; j < K; ++j) {
        const float a = std::exp(g[j]);
        for (int64_t c = 0; c < V; ++c) S[j * V + c] *= a;
      }
      // 2. e = v - Sᵀ k
      for (int64_t c = 0; c < V; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) acc += S[j * V + c] * k[j];
        e[size_t(c)] = v[c] - acc;
      }
      // 3. S <- S + beta k eᵀ
      for (int64_t j = 0; j < K; ++j)
        for (int64_t c = 0; c < V; ++c) S[j * V + c] += b * k[j] * e[size_t(c)];
      // 4. o = Sᵀ (scale q)
      for (int64_t c = 0; c < V; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) acc += S[j * V + c] * (scale * q[j]);
        o[c] = acc;
      }
    }
  }
}

namespace {

// The recurrence is independent per value column, so one task owns a tile S[:, c0 .. c0 + 16*NV)
// (K x 16*NV floats: 16 KiB for K = 128, NV = 2, resident in L1) and walks all T tokens. The
// update of token t and the decay/read of token t+1 share one pass over the tile:
//   s = S[j] + k_t[j] u_t;  o_t += scale q_t[j] s;  s *= α_{t+1}[j];  acc_{t+1} += k_{t+1}[j] s
// (u_t = β_t (v_t − acc_t)), so each row is loaded and stored once per token.
template <int NV>
void recurrent_tile(const KdaDims& d, const KdaTensors& t, float scale, int64_t h, int64_t c0,
                    float* alpha /* f32 [K] scratch */) {
  const int64_t H = d.H, K = d.K, V = d.V;
  float* S = t.S + h * K * V + c0;
  auto row_q = [&](int64_t s) { return t.q + (s * H + h) * K; };
  auto row_k = [&](int64_t s) { return t.k + (s * H + h) * K; };
  auto row_g = [&](int64_t s) { return t.g + (s * H + h) * K; };
  __m512 acc[NV];
  // Prologue: decay by α_0 and read acc_0 = Sᵀ k_0.
  simd::exp_array(row_g(0), K, alpha);
#pragma GCC unroll 4
  for (int i = 0; i < NV; ++i) acc[i] = _mm512_setzero_ps();
  {
    const float* k0 = row_k(0);
    for (int64_t j = 0; j < K; ++j) {
      const __m512 a = _mm512_set1_ps(alpha[j]), kj = _mm512_set1_ps(k0[j]);
#pragma GCC unroll 4
      for (int i = 0; i < NV; ++i) {
        const __m512 sv = _mm512_mul_ps(_mm512_loadu_ps(S + j * V + 16 * i), a);
        _mm512_storeu_ps(S + j * V + 16 * i, sv);
        acc[i] = _mm512_fmadd_ps(kj, sv, acc[i]);
      }
    }
  }
  for (int64_t s = 0; s < d.T; ++s) {
    const float b = t.beta[s * H + h];
    const float* v = t.v + (s * H + h) * V + c0;
    __m512 u[NV], o[NV], nacc[NV];
#pragma GCC unroll 4
    for (int i = 0; i < NV; ++i) {
      u[i] = _mm512_mul_ps(_mm512_set1_ps(b), _mm512_sub_ps(_mm512_loadu_ps(v + 16 * i), acc[i]));
      o[i] = _mm512_setzero_ps();
      nacc[i] = _mm512_setzero_ps();
    }
    const float* q = row_q(s);
    const float* k = row_k(s);
    const bool more = s + 1 < d.T;
    if (more) {
      simd::exp_array(row_g(s + 1), K, alpha);
      const float* kn = row_k(s + 1);
      for (int64_t j = 0; j < K; ++j) {
        const __m512 kj = _mm512_set1_ps(k[j]), qj = _mm512_set1_ps(q[j]);
        const __m512 a = _mm512_set1_ps(alpha[j]), knj = _mm512_set1_ps(kn[j]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) {
          __m512 sv = _mm512_fmadd_ps(kj, u[i], _mm512_loadu_ps(S + j * V + 16 * i));
          o[i] = _mm512_fmadd_ps(qj, sv, o[i]);
          sv = _mm512_mul_ps(sv, a);
          nacc[i] = _mm512_fmadd_ps(knj, sv, nacc[i]);
          _mm512_storeu_ps(S + j * V + 16 * i, sv);
        }
      }
    } else {
      for (int64_t j = 0; j < K; ++j) {
        const __m512 kj = _mm512_set1_ps(k[j]), qj = _mm512_set1_ps(q[j]);
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) {
          const __m512 sv = _mm512_fmadd_ps(kj, u[i], _mm512_loadu_ps(S + j * V + 16 * i));
          o[i] = _mm512_fmadd_ps(qj, sv, o[i]);
          _mm512_storeu_ps(S + j * V + 16 * i, sv);
        }
      }
    }
    float* out = t.o + (s * H + h) * V + c0;
#pragma GCC unroll 4
    for (int i = 0; i < NV; ++i) {
      _mm512_storeu_ps(out + 16 * i, _mm512_mul_ps(o[i], _mm512_set1_ps(scale)));
      acc[i] = nacc[i];
    }
  }
}

}  // namespace

void kda_recurrent(const KdaDims& d, const KdaTensors& t, float scale) {
  kda_check_args(d, t);
  if (d.T == 0) return;
  if (d.V % 16 != 0) {  // no vector tiling for odd value dims
    kda_recurrent_ref(d, t, scale);
    return;
  }
  const int64_t tiles32 = d.V / 32, tail16 = (d.V % 32) / 16;
  const int64_t per_head = tiles32 + tail16;
  const int64_t n_tasks = d.H * per_head;
  // Decode of a small layer is a few microseconds: threads only pay off with enough work.
  const bool parallel = n_tasks > 1 && d.T * d.K * d.V * d.H >= (int64_t(1) << 16);
#pragma omp parallel if (parallel)
  {
    std::vector<float> alpha(static_cast<size_t>(d.K));
#pragma omp for schedule(static)
    for (int64_t task = 0; task < n_tasks; ++task) {
      const int64_t h = task / per_head, i = task % per_head;
      if (i < tiles32)
        recurrent_tile<2>(d, t, scale, h, 32 * i, alpha.data());
      else
        recurrent_tile<1>(d, t, scale, h, 32 * tiles32, alpha.data());
    }
  }
}

}  // namespace ds
