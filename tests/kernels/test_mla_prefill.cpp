// The expanded MLA prefill's CPU reference (kernels/mla_prefill.h) is the absorbed attention
// (kernels/mla_attention.h) followed by W_UV: the same latents and kv_b_proj both ways, the keys and
// values of the expanded form rounded to bf16 (its input dtype), so the two agree to that rounding.
// The latent gather rounds each pool value to bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "kernels/mla_attention.h"
#include "kernels/mla_prefill.h"
#include "test_util.h"

namespace ds {
namespace {

TEST(MlaPrefill, ExpandedMatchesAbsorbedUpToBf16) {
  const int64_t H = 3, R = 32, dr = 16, dn = 24, dv = 20, dq = dn + dr, P = 4, p0 = 9, T = 14, L = p0 + T;
  const int64_t E = R + dr, W = H * (dn + dv);
  // Pages of the one sequence in a scrambled order; pool values exact in bf16.
  std::vector<float> pool = test::randn(size_t(8 * P * E), 1);
  for (float& x : pool) x = bf16_to_f32(f32_to_bf16(x));
  std::vector<int32_t> table = {5, 2, 7, 0, 3, 6}, offset = {0}, seq(size_t(T), 0), pos;
  for (int32_t t = 0; t < T; ++t) pos.push_back(int32_t(p0 + t));
  MlaPagedLatents p;
  p.pool = pool.data(), p.n_pages = 8, p.page_tokens = P, p.R = R, p.dr = dr;
  p.page_table = TensorView::contiguous(table.data(), DType::I32, {int64_t(table.size())});
  p.page_offset = TensorView::contiguous(offset.data(), DType::I32, {1});
  p.tok_seq = TensorView::contiguous(seq.data(), DType::I32, {T});
  p.tok_pos = TensorView::contiguous(pos.data(), DType::I32, {T});
  const std::vector<float> kv_b = test::randn(size_t(W * R), 2, 0.2f), q = test::randn(size_t(T * H * dq), 3);
  const float scale = 1.0f / std::sqrt(float(dq));

  // Absorbed: q̂_h = W_UK,hᵀ q_nope,h; ctx_h over the latents; o_h = W_UV,h ctx_h.
  std::vector<float> qhat(size_t(T * H * R), 0.0f), ctx(size_t(T * H * R)), o_abs(size_t(T * H * dv), 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < dn; ++j)
          qhat[size_t((t * H + h) * R + r)] +=
              q[size_t(t * H * dq + h * dq + j)] * kv_b[size_t((h * (dn + dv) + j) * R + r)];
  MlaAttentionArgs a;
  a.H = H, a.q_hat = TensorView::matrix(qhat.data(), DType::F32, T, H * R);
  a.q_pe = TensorView::matrix(const_cast<float*>(q.data()), DType::F32, T, H * dq), a.q_pe_col = dn,
  a.q_pe_head_stride = dq;
  a.scale = scale, a.ctx = TensorView::matrix(ctx.data(), DType::F32, T, H * R);
  mla_attention(p, a);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t c = 0; c < dv; ++c)
        for (int64_t r = 0; r < R; ++r)
          o_abs[size_t(t * H * dv + h * dv + c)] +=
              kv_b[size_t((h * (dn + dv) + dn + c) * R + r)] * ctx[size_t((t * H + h) * R + r)];

  // Expanded: the gathered bf16 latents, kv = c · W_kv_bᵀ rounded to bf16, one pass per head.
  std::vector<uint16_t> lat(size_t(L * E)), kv(size_t(L * W));
  mla_gather_latents(p, 0, L, TensorView::matrix(lat.data(), DType::BF16, L, E));
  for (int64_t t = 0; t < L; ++t) {
    const int32_t page = table[size_t(t / P)];
    for (int64_t k = 0; k < E; ++k)
      ASSERT_EQ(bf16_to_f32(lat[size_t(t * E + k)]), pool[size_t((page * P + t % P) * E + k)]);
    for (int64_t n = 0; n < W; ++n) {
      double s = 0;
      for (int64_t r = 0; r < R; ++r)
        s += double(bf16_to_f32(lat[size_t(t * E + r)])) * kv_b[size_t(n * R + r)];
      kv[size_t(t * W + n)] = f32_to_bf16(float(s));
    }
  }
  std::vector<float> o_exp(size_t(T * H * dv));
  MlaExpandedArgs x;
  x.H = H, x.dn = dn, x.dr = dr, x.dv = dv;
  x.q = TensorView::matrix(const_cast<float*>(q.data()), DType::F32, T, H * dq);
  x.kv = TensorView::matrix(kv.data(), DType::BF16, L, W);
  x.k_pe = TensorView::matrix(lat.data() + R, DType::BF16, L, dr, E);
  x.p0 = p0, x.scale = scale;
  x.o = TensorView::matrix(o_exp.data(), DType::F32, T, H * dv);
  mla_attention_expanded(x);
  const double e = test::rel_l2(o_exp, o_abs);
  EXPECT_LE(e, 5e-3);  // bf16 rounding of keys and values: 2^-9 relative at most per element
}

}  // namespace
}  // namespace ds
