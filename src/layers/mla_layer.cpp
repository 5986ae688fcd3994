#include "layers/mla_layer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "layers/mla_projections.h"

namespace ds {

MlaLayer::MlaLayer(const MlaConfig& cfg, int64_t hidden, MlaParams params)
    : cfg_(cfg), hidden_(hidden), p_(std::move(params)) {
  const int64_t H = cfg_.n_head, dq = cfg_.qk_head_dim(), dn = cfg_.qk_nope_head_dim;
  const int64_t dv = cfg_.v_head_dim, R = cfg_.kv_lora_rank, L = cfg_.latent_dim();
  if (cfg_.q_lora_rank == 0) {
    DS_CHECK(p_.q_proj.rows == H * dq && p_.q_proj.cols == hidden_,
             "mla q_proj is [{}, {}], expected [{}, {}]", p_.q_proj.rows, p_.q_proj.cols, H * dq, hidden_);
  } else {
    const int64_t rq = cfg_.q_lora_rank;
    DS_CHECK(p_.q_a.rows == rq && p_.q_a.cols == hidden_ && p_.q_b.rows == H * dq && p_.q_b.cols == rq &&
                 int64_t(p_.q_a_norm.size()) == rq,
             "mla q_a [{}, {}] / q_b [{}, {}] / q_a_layernorm {} inconsistent with q_lora_rank {}",
             p_.q_a.rows, p_.q_a.cols, p_.q_b.rows, p_.q_b.cols, p_.q_a_norm.size(), rq);
  }
  DS_CHECK(p_.kv_a.rows == L && p_.kv_a.cols == hidden_,
           "mla kv_a_proj_with_mqa is [{}, {}], expected [{}, {}]", p_.kv_a.rows, p_.kv_a.cols, L, hidden_);
  DS_CHECK(int64_t(p_.kv_a_norm.size()) == R, "mla kv_a_layernorm has {} values, expected {}",
           p_.kv_a_norm.size(), R);
  DS_CHECK(p_.kv_b.rows == H * (dn + dv) && p_.kv_b.cols == R, "mla kv_b_proj is [{}, {}], expected [{}, {}]",
           p_.kv_b.rows, p_.kv_b.cols, H * (dn + dv), R);
  if (cfg_.output_gate)
    DS_CHECK(p_.g_proj.data != nullptr && p_.g_proj.rows == H * dv && p_.g_proj.cols == hidden_,
             "mla g_proj is [{}, {}], expected [{}, {}] (mla_use_output_gate)", p_.g_proj.rows,
             p_.g_proj.cols, H * dv, hidden_);
  DS_CHECK(p_.o_proj.rows == hidden_ && p_.o_proj.cols == H * dv, "mla o_proj is [{}, {}], expected [{}, {}]",
           p_.o_proj.rows, p_.o_proj.cols, hidden_, H * dv);
  kv_b_f32_ = to_f32(p_.kv_b);
}

void MlaLayer::project_q(const float* x, int64_t T, float* q) const {
  if (cfg_.q_lora_rank == 0) {
    linear(f32_rows(x, T, p_.q_proj.cols), p_.q_proj, f32_rows(q, T, p_.q_proj.rows));
    return;
  }
  std::vector<float> qa(size_t(T * cfg_.q_lora_rank));  // f32 [T, r_q]
  linear(f32_rows(x, T, p_.q_a.cols), p_.q_a, f32_rows(qa.data(), T, p_.q_a.rows));
  rmsnorm(f32_rows(qa.data(), T, cfg_.q_lora_rank), f32_vec(p_.q_a_norm.data(), cfg_.q_lora_rank), kQNormEps,
          f32_rows(qa.data(), T, cfg_.q_lora_rank));
  linear(f32_rows(qa.data(), T, p_.q_b.cols), p_.q_b, f32_rows(q, T, p_.q_b.rows));
}

void MlaLayer::forward(const LayerBatch& batch, std::span<const MlaLatentPages> latents, const float* x,
                       float* y, MlaAttnMode mode) const {
  const int64_t T = batch.n_tokens(), H = cfg_.n_head, dq = cfg_.qk_head_dim();
  const int64_t dv = cfg_.v_head_dim, R = cfg_.kv_lora_rank, L = cfg_.latent_dim();
  DS_CHECK(int64_t(latents.size()) == batch.n_seq(), "mla layer: {} latent views for {} sequences",
           latents.size(), batch.n_seq());
  for (int s = 0; s < batch.n_seq(); ++s) {
    const MlaLatentPages& c = latents[size_t(s)];
    DS_CHECK(c.latent_dim == L && c.pool != nullptr && c.page_tokens > 0,
             "mla layer: sequence {} latent view (width {}) does not fit the layer (width {})", s,
             c.latent_dim, L);
    DS_CHECK(c.n_tokens >= 0 && c.n_tokens + batch.len(s) <= c.capacity(),
             "mla layer: sequence {} needs {} latent rows, its pages hold {}", s, c.n_tokens + batch.len(s),
             c.capacity());
  }
  if (T == 0) return;
  std::vector<float> q(size_t(T * H * dq)), kv(size_t(T * L)), o(size_t(T * H * dv));
  if (cfg_.q_lora_rank == 0) {  // both projections of x in one batch
    const LinearJob jobs[] = {
        {f32_rows(x, T, p_.q_proj.cols), p_.q_proj, f32_rows(q.data(), T, p_.q_proj.rows)},
        {f32_rows(x, T, p_.kv_a.cols), p_.kv_a, f32_rows(kv.data(), T, p_.kv_a.rows)}};
    linear_batch(jobs);
  } else {
    project_q(x, T, q.data());
    linear(f32_rows(x, T, p_.kv_a.cols), p_.kv_a, f32_rows(kv.data(), T, p_.kv_a.rows));
  }
  for (int64_t t = 0; t < T; ++t)  // normalise the latent part only; k_pe stays as projected
    rmsnorm(f32_rows(kv.data() + t * L, 1, R), f32_vec(p_.kv_a_norm.data(), R), kLatentNormEps,
            f32_rows(kv.data() + t * L, 1, R));
  bool decode = true;
  for (int s = 0; s < batch.n_seq(); ++s) decode = decode && batch.len(s) == 1;
  const bool absorbed = mode == MlaAttnMode::Absorbed || (mode == MlaAttnMode::Auto && decode);
  std::vector<LatentAttnSeq> absorbed_seqs;  // decode form: every sequence in one kernel call
  for (int s = 0; s < batch.n_seq(); ++s) {
    const MlaLatentPages& c = latents[size_t(s)];
    const int64_t b = batch.begin(s), n = batch.len(s);
    for (int64_t i = 0; i < n; ++i) std::copy_n(kv.data() + (b + i) * L, L, c.row(c.n_tokens + i));
    if (n == 0) continue;
    if (absorbed)
      absorbed_seqs.push_back({q.data() + b * H * dq, H * dq, o.data() + b * H * dv, H * dv, n,
                               c.n_tokens + n, LatentRows{c.pool, c.pages, c.page_tokens, L}});
    else
      attend_expanded(c, c.n_tokens + n, n, q.data() + b * H * dq, o.data() + b * H * dv);
  }
  // Absorbed form over the cached latents (kernels/attention.h): q̂ = W_UK,hᵀ q_nope,
  // score = q̂·c_t + q_pe·k_pe_t, o_h = W_UV,h Σ_t p_t c_t.
  if (!absorbed_seqs.empty())
    latent_attention({H, cfg_.qk_nope_head_dim, cfg_.qk_rope_head_dim, dv, R}, absorbed_seqs,
                     kv_b_f32_.data(), 1.0f / std::sqrt(float(dq)));
  if (cfg_.output_gate) mla_output_gate(p_.g_proj, x, T, o.data());  // K3 gated MLA
  linear(f32_rows(o.data(), T, p_.o_proj.cols), p_.o_proj, f32_rows(y, T, p_.o_proj.rows));
}

// Prefill form: k_t,h = [W_UK,h c_t ; k_pe_t], v_t,h = W_UV,h c_t for every cached t, then causal
// softmax attention of the n newest positions over all Tc (kernels/attention.h).
void MlaLayer::attend_expanded(const MlaLatentPages& c, int64_t Tc, int64_t n, const float* q,
                               float* o) const {
  const int64_t H = cfg_.n_head, dq = cfg_.qk_head_dim(), dn = cfg_.qk_nope_head_dim;
  const int64_t dv = cfg_.v_head_dim, R = cfg_.kv_lora_rank;
  const int64_t L = cfg_.latent_dim(), KV = dn + dv;
  // The Tc latent rows as one matrix: in place when the pages are adjacent, else gathered.
  std::vector<float> gathered;
  const float* latent = c.row(0);
  if (!c.contiguous(Tc)) {
    gathered.resize(size_t(Tc * L));
    for (int64_t t = 0; t < Tc; t += c.page_tokens)
      std::copy_n(c.row(t), std::min(c.page_tokens, Tc - t) * L, gathered.data() + t * L);
    latent = gathered.data();
  }
  std::vector<float> kvb(size_t(Tc * H * KV));  // f32 [Tc, H, nope + v]
  linear(f32_rows(latent, Tc, p_.kv_b.cols, L), p_.kv_b, f32_rows(kvb.data(), Tc, p_.kv_b.rows, H * KV),
         false);
  std::vector<float> k(size_t(Tc * H * dq)), v(size_t(Tc * H * dv));  // f32 [Tc, H, dq], [Tc, H, dv]
  for (int64_t t = 0; t < Tc; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float* kv_th = kvb.data() + (t * H + h) * KV;
      float* k_th = k.data() + (t * H + h) * dq;
      std::copy_n(kv_th, dn, k_th);
      std::copy_n(latent + t * L + R, dq - dn, k_th + dn);  // shared k_pe (NoPE: not rotated)
      std::copy_n(kv_th + dn, dv, v.data() + (t * H + h) * dv);
    }
  const AttnDims d{n, Tc, H, dq, dv};
  attention_causal(d, f32_rows(q, n, H * dq), f32_rows(k.data(), Tc, H * dq), f32_rows(v.data(), Tc, H * dv),
                   1.0f / std::sqrt(float(dq)), f32_rows(o, n, H * dv));
}

}  // namespace ds
