#include "kernels/cpu/mla_prefill.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"

namespace ds::cpu {

void mla_gather_latents(const MlaPagedLatents& p, int64_t page_off, int64_t L, const TensorView& out) {
  const int64_t E = p.R + p.dr;
  const int32_t* table = static_cast<const int32_t*>(p.page_table.data) + page_off;
  for (int64_t t = 0; t < L; ++t) {
    const float* src = p.pool + (int64_t(table[t / p.page_tokens]) * p.page_tokens + t % p.page_tokens) * E;
    uint16_t* dst = static_cast<uint16_t*>(out.data) + t * out.stride[0];
    for (int64_t k = 0; k < E; ++k) dst[k] = f32_to_bf16(src[k]);
  }
}

void mla_attention_expanded(const MlaExpandedArgs& a) {
  const int64_t T = a.q.shape[0], H = a.H, dn = a.dn, dr = a.dr, dv = a.dv, dq = dn + dr;
  auto kv = [&](int64_t t, int64_t c) {
    return bf16_to_f32(static_cast<const uint16_t*>(a.kv.data)[t * a.kv.stride[0] + c]);
  };
  auto kpe = [&](int64_t t, int64_t c) {
    return bf16_to_f32(static_cast<const uint16_t*>(a.k_pe.data)[t * a.k_pe.stride[0] + c]);
  };
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i) {
      const float* q = static_cast<const float*>(a.q.data) + i * a.q.stride[0] + h * dq;
      const int64_t n = a.p0 + i + 1;
      std::vector<double> s(static_cast<size_t>(n)), o(static_cast<size_t>(dv), 0.0);
      double mx = -1e300;
      for (int64_t t = 0; t < n; ++t) {
        double d = 0;
        for (int64_t c = 0; c < dn; ++c) d += double(q[c]) * kv(t, h * (dn + dv) + c);
        for (int64_t c = 0; c < dr; ++c) d += double(q[dn + c]) * kpe(t, c);
        s[size_t(t)] = d * a.scale;
        mx = std::max(mx, s[size_t(t)]);
      }
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        const double p = std::exp(s[size_t(t)] - mx);
        sum += p;
        for (int64_t c = 0; c < dv; ++c) o[size_t(c)] += p * kv(t, h * (dn + dv) + dn + c);
      }
      float* out = static_cast<float*>(a.o.data) + i * a.o.stride[0] + h * dv;
      for (int64_t c = 0; c < dv; ++c) out[c] = float(o[size_t(c)] / sum);
    }
}

}  // namespace ds::cpu
