#include "kernels/cpu/attn_res.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ds::cpu {
namespace {

// rsqrt(mean(v²) + eps) · (v · q) of one row.
float logit(const float* v, const float* q, int64_t D, float eps) {
  double ss = 0.0, dot = 0.0;
  for (int64_t c = 0; c < D; ++c) ss += double(v[c]) * v[c], dot += double(v[c]) * q[c];
  return float(dot / std::sqrt(ss / double(D) + eps));
}

}  // namespace

void attn_res_mix(std::span<const float* const> sources, int64_t T, int64_t D, const float* query, float eps,
                  float* out) {
  const size_t n = sources.size();
  std::vector<float> w(n);
  for (int64_t t = 0; t < T; ++t) {
    float mx = -INFINITY;
    for (size_t i = 0; i < n; ++i) mx = std::max(mx, w[i] = logit(sources[i] + t * D, query, D, eps));
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += (w[i] = std::exp(w[i] - mx));
    float* o = out + t * D;
    std::fill(o, o + D, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      const float wi = w[i] / sum;
      const float* v = sources[i] + t * D;
      for (int64_t c = 0; c < D; ++c) o[c] += wi * v[c];
    }
  }
}

void attn_res_block_scores(std::span<const float* const> blocks, int64_t T, int64_t D, const float* queries,
                           int64_t Q, float eps, float* m, float* s, float* o) {
  const size_t nb = blocks.size();
  std::vector<float> l(nb);
  for (int64_t j = 0; j < Q; ++j)
    for (int64_t t = 0; t < T; ++t) {
      float mx = -INFINITY;
      for (size_t i = 0; i < nb; ++i)
        mx = std::max(mx, l[i] = logit(blocks[i] + t * D, queries + j * D, D, eps));
      float sum = 0.0f;
      float* oj = o + (j * T + t) * D;
      std::fill(oj, oj + D, 0.0f);
      for (size_t i = 0; i < nb; ++i) {
        const float e = std::exp(l[i] - mx);
        sum += e;
        const float* v = blocks[i] + t * D;
        for (int64_t c = 0; c < D; ++c) oj[c] += e * v[c];
      }
      m[j * T + t] = mx;
      s[j * T + t] = sum;
    }
}

void attn_res_merge(int64_t j, int64_t T, int64_t D, const float* m, const float* s, const float* o,
                    const float* partial, const float* query, float eps, float* out) {
  for (int64_t t = 0; t < T; ++t) {
    const int64_t idx = j * T + t;
    const float* oj = o + idx * D;
    float* h = out + t * D;
    if (partial == nullptr) {
      for (int64_t c = 0; c < D; ++c) h[c] = oj[c] / s[idx];
      continue;
    }
    const float* p = partial + t * D;
    const float l = logit(p, query, D, eps);
    const float mx = std::max(m[idx], l);
    const float a = std::exp(m[idx] - mx), b = std::exp(l - mx);
    const float inv = 1.0f / (a * s[idx] + b);
    for (int64_t c = 0; c < D; ++c) h[c] = (a * oj[c] + b * p[c]) * inv;
  }
}

}  // namespace ds::cpu
