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

namespace {
void check_latent(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b) {
  DS_CHECK(s.H > 0 && s.dn > 0 && s.dr >= 0 && s.dv > 0 && s.R > 0,
           "latent_attention: bad shape H={} dn={} dr={} dv={} R={}", s.H, s.dn, s.dr, s.dv, s.R);
  DS_CHECK(w_kv_b != nullptr, "latent_attention: null kv_b weights");
  for (size_t i = 0; i < seqs.size(); ++i) {
    const LatentAttnSeq& q = seqs[i];
    DS_CHECK(q.n_q >= 1 && q.n_kv >= q.n_q, "latent_attention: sequence {} has n_q={} n_kv={}", i, q.n_q,
             q.n_kv);
    DS_CHECK(q.q && q.o && q.kv.base && q.q_stride >= s.H * (s.dn + s.dr) && q.o_stride >= s.H * s.dv &&
                 q.kv.row_stride >= s.R + s.dr && q.kv.page_rows >= 1,
             "latent_attention: sequence {}: null buffer or strides below the row widths", i);
    DS_CHECK(q.kv.pages.empty() || int64_t(q.kv.pages.size()) * q.kv.page_rows >= q.n_kv,
             "latent_attention: sequence {}: {} pages of {} rows hold fewer than {} rows", i,
             q.kv.pages.size(), q.kv.page_rows, q.n_kv);
  }
}
}  // namespace

void latent_attention(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                      float scale) {
  check_latent(s, seqs, w_kv_b);
  const KernelTable& kt = kernels();
  const int64_t n_tasks = int64_t(seqs.size()) * s.H;
  int64_t work = 0, max_kv = 0;  // multiply-adds, roughly
  for (const LatentAttnSeq& q : seqs) {
    work += q.n_q * s.H * (q.n_kv * (2 * s.R + s.dr) + (s.dn + s.dv) * s.R);
    max_kv = std::max(max_kv, q.n_kv);
  }
#pragma omp parallel if (n_tasks > 1 && work >= (int64_t(1) << 17))
  {
    std::vector<float> scratch(size_t(max_kv + 2 * s.R));
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < n_tasks; ++task)
      kt.latent_attend_head(s, seqs[size_t(task / s.H)], w_kv_b, scale, task % s.H, scratch.data());
  }
}

void latent_attention_ref(const LatentAttnShape& s, std::span<const LatentAttnSeq> seqs, const float* w_kv_b,
                          float scale) {
  check_latent(s, seqs, w_kv_b);
  const int64_t R = s.R, dn = s.dn, dr = s.dr, dv = s.dv;
  for (const LatentAttnSeq& sq : seqs)
    for (int64_t h = 0; h < s.H; ++h) {
      const float* wuk = w_kv_b + h * (dn + dv) * R;
      const float* wuv = wuk + dn * R;
      for (int64_t i = 0; i < sq.n_q; ++i) {
        const float* q = sq.q + i * sq.q_stride + h * (dn + dr);
        const int64_t nt = sq.n_kv - sq.n_q + i + 1;
        std::vector<double> qhat(static_cast<size_t>(R), 0.0), p(static_cast<size_t>(nt)),
            ctx(static_cast<size_t>(R), 0.0);
        for (int64_t d = 0; d < dn; ++d)
          for (int64_t r = 0; r < R; ++r) qhat[size_t(r)] += double(q[d]) * wuk[d * R + r];
        double mx = -1e300, sum = 0.0;
        for (int64_t t = 0; t < nt; ++t) {
          const float* c = sq.kv.row(t);
          double acc = 0.0;
          for (int64_t r = 0; r < R; ++r) acc += qhat[size_t(r)] * c[r];
          for (int64_t j = 0; j < dr; ++j) acc += double(q[dn + j]) * c[R + j];
          p[size_t(t)] = acc * scale;
          mx = std::max(mx, p[size_t(t)]);
        }
        for (double& v : p) sum += (v = std::exp(v - mx));
        for (int64_t t = 0; t < nt; ++t)
          for (int64_t r = 0; r < R; ++r) ctx[size_t(r)] += p[size_t(t)] / sum * sq.kv.row(t)[r];
        float* o = sq.o + i * sq.o_stride + h * dv;
        for (int64_t j = 0; j < dv; ++j) {
          double acc = 0.0;
          for (int64_t r = 0; r < R; ++r) acc += double(wuv[j * R + r]) * ctx[size_t(r)];
          o[j] = float(acc);
        }
      }
    }
}

}  // namespace ds::cpu
