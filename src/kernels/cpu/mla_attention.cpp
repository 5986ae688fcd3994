#include "kernels/cpu/mla_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace ds::cpu {
namespace {

const int32_t* i32(const TensorView& v) {
  return static_cast<const int32_t*>(v.data);
}

// Entry of position t of sequence n: f32 [R + dr].
float* entry(const MlaPagedLatents& p, int32_t n, int64_t t) {
  const int32_t page = i32(p.page_table)[i32(p.page_offset)[n] + t / p.page_tokens];
  return p.pool + (int64_t(page) * p.page_tokens + t % p.page_tokens) * (p.R + p.dr);
}

}  // namespace

void mla_write_latents(const MlaPagedLatents& p, const TensorView& c, const TensorView& k_pe) {
  for (int64_t i = 0; i < c.shape[0]; ++i) {
    float* e = entry(p, i32(p.tok_seq)[i], i32(p.tok_pos)[i]);
    std::memcpy(e, static_cast<const float*>(c.data) + i * c.stride[0], size_t(p.R) * sizeof(float));
    std::memcpy(e + p.R, static_cast<const float*>(k_pe.data) + i * k_pe.stride[0],
                size_t(p.dr) * sizeof(float));
  }
}

void mla_attention(const MlaPagedLatents& p, const MlaAttentionArgs& a) {
  const int64_t T = a.q_hat.shape[0], H = a.H, R = p.R, dr = p.dr;
  std::vector<float> score;
  std::vector<double> ctx(static_cast<size_t>(R));
  for (int64_t i = 0; i < T; ++i) {
    const int32_t n = i32(p.tok_seq)[i];
    const int64_t n_ctx = int64_t(i32(p.tok_pos)[i]) + 1;
    score.resize(size_t(n_ctx));
    for (int64_t h = 0; h < H; ++h) {
      const float* qh = static_cast<const float*>(a.q_hat.data) + i * a.q_hat.stride[0] + h * R;
      const float* qp =
          static_cast<const float*>(a.q_pe.data) + i * a.q_pe.stride[0] + a.q_pe_col + h * a.q_pe_head_stride;
      float mx = -INFINITY;
      for (int64_t t = 0; t < n_ctx; ++t) {
        const float* e = entry(p, n, t);
        float s = 0.0f;
        for (int64_t d = 0; d < R; ++d) s += qh[d] * e[d];
        for (int64_t d = 0; d < dr; ++d) s += qp[d] * e[R + d];
        score[size_t(t)] = s * a.scale;
        mx = std::max(mx, score[size_t(t)]);
      }
      double sum = 0.0;
      std::fill(ctx.begin(), ctx.end(), 0.0);
      for (int64_t t = 0; t < n_ctx; ++t) {
        const double w = std::exp(double(score[size_t(t)]) - mx);
        sum += w;
        const float* e = entry(p, n, t);
        for (int64_t d = 0; d < R; ++d) ctx[size_t(d)] += w * e[d];
      }
      float* out = static_cast<float*>(a.ctx.data) + i * a.ctx.stride[0] + h * R;
      for (int64_t d = 0; d < R; ++d) out[d] = float(ctx[size_t(d)] / sum);
    }
  }
}

}  // namespace ds::cpu
