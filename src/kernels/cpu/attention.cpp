#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/isa/kernel_table.h"

namespace ds::cpu {

namespace {

constexpr int64_t kQBlock = 16;

void check_attn(const AttnDims& d, int64_t qs, int64_t ks, int64_t vs, int64_t os) {
  DS_CHECK(d.n_q >= 0 && d.n_kv >= d.n_q && d.H > 0 && d.Dk > 0 && d.Dv > 0,
           "attention: bad dims n_q={} n_kv={} H={} Dk={} Dv={}", d.n_q, d.n_kv, d.H, d.Dk, d.Dv);
  DS_CHECK(qs >= d.H * d.Dk && ks >= d.H * d.Dk && vs >= d.H * d.Dv && os >= d.H * d.Dv,
           "attention: row strides q={} k={} v={} o={} below the head widths", qs, ks, vs, os);
}

}  // namespace

void attention_causal(const AttnDims& d, const float* q, int64_t q_stride, const float* k, int64_t k_stride,
                      const float* v, int64_t v_stride, float scale, float* o, int64_t o_stride) {
  check_attn(d, q_stride, k_stride, v_stride, o_stride);
  if (d.n_q == 0) return;
  // K transposed per head: Kt[h] f32 [Dk, n_kv], so score blocks are plain row-major GEMMs.
  std::vector<float> Kt(size_t(d.H * d.Dk * d.n_kv));
#pragma omp parallel for schedule(static) if (d.H * d.n_kv * d.Dk >= (int64_t(1) << 16))
  for (int64_t h = 0; h < d.H; ++h)
    for (int64_t j = 0; j < d.n_kv; ++j)
      for (int64_t c = 0; c < d.Dk; ++c)
        Kt[size_t((h * d.Dk + c) * d.n_kv + j)] = k[j * k_stride + h * d.Dk + c];
  const cpu::KernelTable& kt = cpu::kernels();
  const int64_t n_blocks = (d.n_q + kQBlock - 1) / kQBlock;
  const bool parallel = d.H * n_blocks > 1 && d.n_q * d.n_kv * d.H * d.Dk >= (int64_t(1) << 16);
#pragma omp parallel if (parallel)
  {
    std::vector<float> P;
    // Largest blocks (last rows see the most keys) first for balance.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < d.H * n_blocks; ++task) {
      const int64_t b = n_blocks - 1 - task / d.H, h = task % d.H;
      const int64_t i0 = b * kQBlock, m = std::min(kQBlock, d.n_q - i0);
      P.resize(size_t(m * (d.n_kv - d.n_q + i0 + m)));
      kt.attend_block(d, h, i0, m, q, q_stride, Kt.data() + h * d.Dk * d.n_kv, v, v_stride, scale, o,
                      o_stride, P.data());
    }
  }
}

void attention_causal_ref(const AttnDims& d, const float* q, int64_t q_stride, const float* k,
                          int64_t k_stride, const float* v, int64_t v_stride, float scale, float* o,
                          int64_t o_stride) {
  check_attn(d, q_stride, k_stride, v_stride, o_stride);
  const int64_t past = d.n_kv - d.n_q;
  std::vector<double> s(size_t(d.n_kv));
  for (int64_t h = 0; h < d.H; ++h)
    for (int64_t i = 0; i < d.n_q; ++i) {
      const int64_t visible = past + i + 1;
      double mx = -1e300;
      for (int64_t j = 0; j < visible; ++j) {
        double acc = 0.0;
        for (int64_t c = 0; c < d.Dk; ++c)
          acc += double(q[i * q_stride + h * d.Dk + c]) * double(k[j * k_stride + h * d.Dk + c]);
        s[size_t(j)] = acc * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < visible; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      for (int64_t c = 0; c < d.Dv; ++c) {
        double acc = 0.0;
        for (int64_t j = 0; j < visible; ++j) acc += s[size_t(j)] * double(v[j * v_stride + h * d.Dv + c]);
        o[i * o_stride + h * d.Dv + c] = float(acc / sum);
      }
    }
}

}  // namespace ds::cpu
