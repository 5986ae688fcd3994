#include "layers/attn_res.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"

namespace ds {
namespace {

// 1/sqrt(mean(v²) + eps) of one f32 [d] vector; the sum is accumulated in double.
float inv_rms(const float* v, int d, float eps) {
  double ss = 0.0;
  for (int i = 0; i < d; ++i) ss += double(v[i]) * v[i];
  return float(1.0 / std::sqrt(ss / d + eps));
}

float dot(const float* a, const float* b, int d) {
  double acc = 0.0;
  for (int i = 0; i < d; ++i) acc += double(a[i]) * b[i];
  return float(acc);
}

}  // namespace

std::vector<float> fold_attn_res_query(std::span<const float> norm_weight,
                                       std::span<const float> proj_weight) {
  DS_CHECK(norm_weight.size() == proj_weight.size(),
           "attn_res: res_norm.weight has {} entries but res_proj.weight has {}", norm_weight.size(),
           proj_weight.size());
  std::vector<float> q(norm_weight.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = norm_weight[i] * proj_weight[i];
  return q;
}

void AttnResQueries::validate() const {
  DS_CHECK(n_layer > 0 && hidden > 0, "attn_res queries: bad shape n_layer {} hidden {}", n_layer, hidden);
  const size_t ld = size_t(n_layer) * hidden;
  DS_CHECK(attn.size() == ld, "attn_res queries: attn has {} values, expected {}", attn.size(), ld);
  DS_CHECK(mlp.size() == ld, "attn_res queries: mlp has {} values, expected {}", mlp.size(), ld);
  DS_CHECK(out.size() == size_t(hidden), "attn_res queries: out has {} values, expected {}", out.size(),
           hidden);
}

void attn_res_mix(std::span<const float* const> sources, int n_tokens, int d, const float* query, float eps,
                  float* out) {
  const int n = int(sources.size());
  DS_CHECK(n > 0, "attn_res_mix: no sources");
  std::vector<float> p(n);
  for (int t = 0; t < n_tokens; ++t) {
    const size_t row = size_t(t) * d;
    float mx = -INFINITY;
    for (int i = 0; i < n; ++i) {
      const float* v = sources[i] + row;
      p[i] = inv_rms(v, d, eps) * dot(v, query, d);
      mx = std::max(mx, p[i]);
    }
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += (p[i] = std::exp(p[i] - mx));
    float* o = out + row;
    std::fill(o, o + d, 0.0f);
    for (int i = 0; i < n; ++i) {
      const float w = p[i] / sum;
      const float* v = sources[i] + row;
      for (int c = 0; c < d; ++c) o[c] += w * v[c];
    }
  }
}

void AttnResBlockScores::compute(std::span<const float* const> blocks, int n_tokens, int d,
                                 std::span<const float* const> queries, float eps) {
  const int nb = int(blocks.size()), nq = int(queries.size());
  DS_CHECK(nb > 0 && nq > 0, "attn_res phase 1: {} blocks, {} queries", nb, nq);
  n_tokens_ = n_tokens, d_ = d, n_queries_ = nq, eps_ = eps;
  m_.assign(size_t(nq) * n_tokens, 0.0f);
  s_.assign(size_t(nq) * n_tokens, 0.0f);
  o_.assign(size_t(nq) * n_tokens * d, 0.0f);
  queries_.resize(size_t(nq) * d);
  for (int j = 0; j < nq; ++j) std::memcpy(queries_.data() + size_t(j) * d, queries[j], sizeof(float) * d);
  std::vector<float> rs(nb), logit(nb);
  for (int t = 0; t < n_tokens; ++t) {
    const size_t row = size_t(t) * d;
    for (int i = 0; i < nb; ++i) rs[i] = inv_rms(blocks[i] + row, d, eps);  // keys normalised once
    for (int j = 0; j < nq; ++j) {
      float mx = -INFINITY;
      for (int i = 0; i < nb; ++i) mx = std::max(mx, logit[i] = rs[i] * dot(blocks[i] + row, queries[j], d));
      float s = 0.0f;
      float* o = o_.data() + (size_t(j) * n_tokens + t) * d;
      for (int i = 0; i < nb; ++i) {
        const float e = std::exp(logit[i] - mx);
        s += e;
        const float* v = blocks[i] + row;
        for (int c = 0; c < d; ++c) o[c] += e * v[c];
      }
      m_[size_t(j) * n_tokens + t] = mx;
      s_[size_t(j) * n_tokens + t] = s;
    }
  }
}

void AttnResBlockScores::merge(int j, const float* partial, float* out) const {
  DS_CHECK(j >= 0 && j < n_queries_, "attn_res phase 2: query {} of {}", j, n_queries_);
  const float* q = queries_.data() + size_t(j) * d_;
  for (int t = 0; t < n_tokens_; ++t) {
    const size_t idx = size_t(j) * n_tokens_ + t;
    const float* o = o_.data() + idx * d_;
    float* h = out + size_t(t) * d_;
    if (partial == nullptr) {
      const float inv = 1.0f / s_[idx];
      for (int c = 0; c < d_; ++c) h[c] = o[c] * inv;
      continue;
    }
    const float* p = partial + size_t(t) * d_;
    const float l = inv_rms(p, d_, eps_) * dot(p, q, d_);
    const float m = std::max(m_[idx], l);
    const float a = std::exp(m_[idx] - m), b = std::exp(l - m);
    const float inv = 1.0f / (a * s_[idx] + b);
    for (int c = 0; c < d_; ++c) h[c] = (a * o[c] + b * p[c]) * inv;
  }
}

AttnResStream::AttnResStream(const AttnResQueries& queries, int block_size, float eps, AttnResMode mode)
    : q_(queries), block_size_(block_size), eps_(eps), mode_(mode) {
  q_.validate();
  DS_CHECK(block_size > 0, "attn_res: attn_res_block_size must be > 0, got {}", block_size);
}

void AttnResStream::start(const float* embeddings, int n_tokens) {
  DS_CHECK(n_tokens >= 0, "attn_res: n_tokens {}", n_tokens);
  n_tokens_ = n_tokens;
  partial_.assign(embeddings, embeddings + size_t(n_tokens) * q_.hidden);
  has_partial_ = true;
  blocks_.clear();
  layer_ = 0;
  block_start_ = 0;
  step_ = Step::AttnIn;
}

void AttnResStream::expect(int layer, Step want, const char* what) const {
  DS_CHECK(step_ == want && layer == layer_, "attn_res: {} for layer {} out of order (next is layer {})",
           what, layer, layer_);
}

void AttnResStream::commit() {
  blocks_.push_back(partial_);
  has_partial_ = false;
  block_start_ = layer_;
  if (mode_ != AttnResMode::TwoPhase) return;
  // Phase 1 for every sublayer query until the next commit (and the output mixer after the last).
  const int end = std::min(layer_ + block_size_, q_.n_layer);
  std::vector<const float*> queries;
  for (int l = layer_; l < end; ++l) {
    queries.push_back(q_.attn_query(l));
    queries.push_back(q_.mlp_query(l));
  }
  if (end == q_.n_layer) queries.push_back(q_.out.data());
  std::vector<const float*> blocks;
  for (const auto& b : blocks_) blocks.push_back(b.data());
  scores_.compute(blocks, n_tokens_, q_.hidden, queries, eps_);
}

void AttnResStream::mix(const float* query, int query_index, bool with_partial, float* h) const {
  if (mode_ == AttnResMode::TwoPhase) {
    scores_.merge(query_index, with_partial ? partial_.data() : nullptr, h);
    return;
  }
  std::vector<const float*> sources;
  for (const auto& b : blocks_) sources.push_back(b.data());
  if (with_partial) sources.push_back(partial_.data());
  attn_res_mix(sources, n_tokens_, q_.hidden, query, eps_, h);
}

void AttnResStream::attn_input(int layer, float* h) {
  expect(layer, Step::AttnIn, "attn_input");
  const bool block_start = layer % block_size_ == 0;
  if (mode_ == AttnResMode::Reference) {
    // HF order: mix [B..., P_in] first (P_in alone at layer 0), then commit P_in.
    if (blocks_.empty())
      std::copy(partial_.begin(), partial_.end(), h);
    else
      mix(q_.attn_query(layer), 0, true, h);
    if (block_start) commit();
  } else if (block_start) {
    // Two-phase: commit first; the just-committed block takes the place of P_in (the paper's two-phase
    // computation).
    commit();
    mix(nullptr, 0, false, h);
  } else {
    mix(nullptr, 2 * (layer - block_start_), true, h);
  }
  step_ = Step::AttnOut;
}

void AttnResStream::add_attn_output(int layer, const float* a) {
  expect(layer, Step::AttnOut, "add_attn_output");
  if (has_partial_) {
    for (size_t i = 0; i < partial_.size(); ++i) partial_[i] += a[i];
  } else {
    std::copy(a, a + partial_.size(), partial_.begin());
  }
  has_partial_ = true;
  step_ = Step::MlpIn;
}

void AttnResStream::mlp_input(int layer, float* h) {
  expect(layer, Step::MlpIn, "mlp_input");
  mix(q_.mlp_query(layer), 2 * (layer - block_start_) + 1, true, h);
  step_ = Step::MlpOut;
}

void AttnResStream::add_mlp_output(int layer, const float* m) {
  expect(layer, Step::MlpOut, "add_mlp_output");
  for (size_t i = 0; i < partial_.size(); ++i) partial_[i] += m[i];
  ++layer_;
  step_ = layer_ == q_.n_layer ? Step::Done : Step::AttnIn;
}

void AttnResStream::final_output(float* h) {
  DS_CHECK(step_ == Step::Done, "attn_res: final_output before the last layer (next is layer {})", layer_);
  mix(q_.out.data(), 2 * (q_.n_layer - block_start_), true, h);
}

}  // namespace ds
