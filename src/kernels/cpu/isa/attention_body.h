// Internal to src/kernels/cpu/isa: one query block of causal attention for one head (the driver,
// attention.cpp, transposes K and spreads heads × blocks over threads).
#pragma once

namespace ds::cpu::DS_ISA {

// Rows [i0, i0 + m) of head h: scores [m, nk] -> probabilities -> o rows. P: scratch of
// m · (n_kv − n_q + i0 + m) floats.
inline void attend_block(const AttnDims& d, int64_t h, int64_t i0, int64_t m, const float* q, int64_t qs,
                         const float* Kt /* [Dk, n_kv] of head h */, const float* v, int64_t vs, float scale,
                         float* o, int64_t os, float* P) {
  const int64_t past = d.n_kv - d.n_q;
  const int64_t nk = past + i0 + m;  // keys visible to the last row of the block
  small_gemm(m, nk, d.Dk, scale, q + i0 * qs + h * d.Dk, qs, Kt, d.n_kv, 0.0f, P, nk);
  for (int64_t r = 0; r < m; ++r) {
    float* p = P + r * nk;
    const int64_t visible = past + i0 + r + 1;
    float mx = p[0];
    for (int64_t j = 1; j < visible; ++j) mx = std::max(mx, p[j]);
    const vf mv = vset1(mx);
    vf sum = vzero();
    for (int64_t j = 0; j < visible; j += kLanes) {
      const int64_t n = visible - j;
      const vf e = vexp(vsub(vloadn(p + j, n), mv));  // masked-off lanes are exp(−mx) but not stored
      vstoren(p + j, e, n);
      sum = vadd(sum, n >= kLanes ? e : vloadn(p + j, n));
    }
    const float inv = 1.0f / vsum(sum);
    scale_row(p, inv, nullptr, visible, p);
    for (int64_t j = visible; j < nk; ++j) p[j] = 0.0f;  // causal mask
  }
  small_gemm(m, d.Dv, nk, 1.0f, P, nk, v + h * d.Dv, vs, 0.0f, o + i0 * os + h * d.Dv, os);
}

// Absorbed MLA decode attention of one sequence and one head h, all its queries (latent_attention.h
// has the math). scratch: n_kv + 2·R floats.
inline void latent_attend_head(const LatentAttnShape& sh, const LatentAttnSeq& sq, const float* w_kv_b,
                               float scale, int64_t h, float* scratch) {
  const int64_t R = sh.R, dn = sh.dn, dr = sh.dr, dv = sh.dv, dq = dn + dr;
  float* s = scratch;
  float* qhat = s + sq.n_kv;
  float* ctx = qhat + R;
  const float* wuk = w_kv_b + h * (dn + dv) * R;  // [dn, R]
  const float* wuv = wuk + dn * R;                // [dv, R]
  for (int64_t i = 0; i < sq.n_q; ++i) {
    const float* q = sq.q + i * sq.q_stride + h * dq;
    const int64_t nt = sq.n_kv - sq.n_q + i + 1;
    std::fill(qhat, qhat + R, 0.0f);
    for (int64_t d = 0; d < dn; ++d) axpy(q[d], wuk + d * R, qhat, R);
    float mx = -3.4e38f;
    for (int64_t t = 0; t < nt; ++t) {
      const float* c = sq.kv.row(t);
      s[t] = (dot(qhat, c, R) + dot(q + dn, c + R, dr)) * scale;
      mx = std::max(mx, s[t]);
    }
    const vf mv = vset1(mx);
    vf sum = vzero();
    for (int64_t t = 0; t < nt; t += kLanes) {
      const int64_t m = nt - t;
      const vf e = vexp(vsub(vloadn(s + t, m), mv));
      vstoren(s + t, e, m);
      sum = vadd(sum, m >= kLanes ? e : vloadn(s + t, m));
    }
    const float inv = 1.0f / vsum(sum);
    std::fill(ctx, ctx + R, 0.0f);
    for (int64_t t = 0; t < nt; ++t) axpy(s[t] * inv, sq.kv.row(t), ctx, R);
    float* o = sq.o + i * sq.o_stride + h * dv;
    for (int64_t j = 0; j < dv; ++j) o[j] = dot(wuv + j * R, ctx, R);
  }
}

}  // namespace ds::cpu::DS_ISA
