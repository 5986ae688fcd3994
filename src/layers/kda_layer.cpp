#include "layers/kda_layer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/kda.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "kernels/short_conv.h"
#include "layers/kda_gates.h"

namespace ds {
namespace {

constexpr float kQkL2Eps = kKdaQkL2Eps;  // fla `fla/modules/l2norm.py` eps

// The conv window after `p` tokens of a piece: the last W-1 pre-conv inputs, taken from the
// piece rows (pre f32 [n, P] per projection) or, before the piece, from the initial window.
void conv_window_at(const float* initial, const float* const pre[3], int64_t P, int64_t w, int64_t p,
                    float* out) {
  for (int i = 0; i < 3; ++i)
    for (int64_t c = 0; c < P; ++c)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t tau = p - w + j;
        out[(i * P + c) * w + j] = tau >= 0 ? pre[i][tau * P + c] : initial[(i * P + c) * w + w + tau];
      }
}

}  // namespace

KdaLayer::KdaLayer(const KdaConfig& cfg, float rms_norm_eps, int64_t hidden, KdaParams params,
                   KdaRunOptions opt)
    : cfg_(cfg), rms_eps_(rms_norm_eps), hidden_(hidden), p_(std::move(params)), opt_(opt) {
  const int64_t H = cfg_.n_head, K = cfg_.head_dim, P = H * K, W = cfg_.conv_kernel;
  for (const WeightView* w : {&p_.q_proj, &p_.k_proj, &p_.v_proj})
    DS_CHECK(w->rows == P && w->cols == hidden_, "kda q/k/v proj is [{}, {}], expected [{}, {}]", w->rows,
             w->cols, P, hidden_);
  DS_CHECK(p_.f_b.rows == P && p_.f_b.cols == p_.f_a.rows && p_.f_a.cols == hidden_,
           "kda forget gate f_a [{}, {}] f_b [{}, {}] inconsistent with P {} D {}", p_.f_a.rows, p_.f_a.cols,
           p_.f_b.rows, p_.f_b.cols, P, hidden_);
  if (cfg_.full_rank_output_gate)  // K3: g_proj [P, D]
    KdaOutputGate{p_.g_proj, {}, {}}.validate(hidden_, P);
  else
    DS_CHECK(p_.g_b.rows == P && p_.g_b.cols == p_.g_a.rows && p_.g_a.cols == hidden_,
             "kda output gate g_a [{}, {}] g_b [{}, {}] inconsistent with P {} D {}", p_.g_a.rows,
             p_.g_a.cols, p_.g_b.rows, p_.g_b.cols, P, hidden_);
  DS_CHECK(p_.b_proj.rows == H && p_.b_proj.cols == hidden_, "kda b_proj is [{}, {}], expected [{}, {}]",
           p_.b_proj.rows, p_.b_proj.cols, H, hidden_);
  DS_CHECK(p_.o_proj.rows == hidden_ && p_.o_proj.cols == P, "kda o_proj is [{}, {}], expected [{}, {}]",
           p_.o_proj.rows, p_.o_proj.cols, hidden_, P);
  for (const auto* c : {&p_.conv_q, &p_.conv_k, &p_.conv_v})
    DS_CHECK(int64_t(c->size()) == P * W, "kda conv taps have {} values, expected {}", c->size(), P * W);
  DS_CHECK(int64_t(p_.a_log.size()) == H, "kda A_log has {} values, expected {}", p_.a_log.size(), H);
  DS_CHECK(int64_t(p_.dt_bias.size()) == P, "kda dt_bias has {} values, expected {}", p_.dt_bias.size(), P);
  DS_CHECK(int64_t(p_.o_norm.size()) == K, "kda o_norm has {} values, expected {}", p_.o_norm.size(), K);
  DS_CHECK(opt_.chunk >= 1, "kda chunk size {} must be >= 1", opt_.chunk);
}

// g = -exp(A_log[h]) * softplus(f + dt_bias) (Kimi Linear), or with
// gate_lower_bound the K3 bounded gate lb * sigmoid(exp(A_log[h]) * (f + dt_bias)) (fla
// `fla/ops/kda/gate.py`).
void KdaLayer::decay_gate(const float* f, int64_t T, float* g) const {
  const int64_t P = cfg_.n_head * cfg_.head_dim;
  const KdaGate gate{cfg_.gate_lower_bound, f32_vec(p_.a_log.data(), cfg_.n_head),
                     f32_vec(p_.dt_bias.data(), P)};
  kda_decay_gate(f32_rows(f, T, P), gate, cfg_.n_head, cfg_.head_dim, f32_rows(g, T, P));
}

void KdaLayer::forward(const LayerBatch& batch, std::span<const KdaSeqIO> io, const float* x, float* y,
                       KdaTrace* trace) const {
  const int64_t T = batch.n_tokens(), H = cfg_.n_head, K = cfg_.head_dim, P = H * K;
  const int64_t W = cfg_.conv_kernel, w = W - 1;
  DS_CHECK(int64_t(io.size()) == batch.n_seq(), "kda layer: {} states for {} sequences", io.size(),
           batch.n_seq());
  for (int s = 0; s < batch.n_seq(); ++s) {  // validate everything before any state changes
    const KdaSeqIO& sio = io[size_t(s)];
    DS_CHECK(sio.state.valid(), "kda layer: sequence {} has no state", s);
    const KdaStateShape want{int(H), int(K), int(w)};
    const KdaStateShape& got = sio.state.shape;
    DS_CHECK(got == want,
             "kda layer: state shape H {} K {} window {} does not match layer H {} K {} window {}",
             got.n_head, got.head_dim, got.conv_window, H, K, w);
    DS_CHECK(sio.emit_to.size() == sio.emit_after.size(),
             "kda layer: sequence {} has {} checkpoint offsets but {} destinations", s, sio.emit_after.size(),
             sio.emit_to.size());
    for (const KdaStateView& e : sio.emit_to)
      DS_CHECK(e.valid() && e.shape == want, "kda layer: sequence {} has a bad checkpoint destination", s);
    int64_t prev = 0;
    for (int64_t p : sio.emit_after) {
      DS_CHECK(p > prev && p <= batch.len(s), "kda checkpoint offset {} not in ({}, {}] (ascending)", p, prev,
               batch.len(s));
      prev = p;
    }
  }
  if (T == 0) return;
  const size_t TP = size_t(T * P);
  // Pre-conv projections, kept for the conv windows of emitted checkpoints. f32 [3, T, P].
  std::vector<float> pre(3 * TP), qkv(3 * TP);
  // Every projection of x in one batch (q, k, v, the forget gate's low rank, β logits, the output
  // gate's first step), then the second low-rank steps in another: two parallel regions, not eight.
  std::vector<float> low_f(size_t(T * p_.f_a.rows)), low_g, g(TP), gate(TP), beta(size_t(T * H));
  const auto from_x = [&](const WeightView& w, float* out) {
    return LinearJob{f32_rows(x, T, w.cols), w, f32_rows(out, T, w.rows)};
  };
  std::vector<LinearJob> jobs = {from_x(p_.q_proj, pre.data()), from_x(p_.k_proj, pre.data() + TP),
                                 from_x(p_.v_proj, pre.data() + 2 * TP), from_x(p_.f_a, low_f.data()),
                                 from_x(p_.b_proj, beta.data())};
  if (cfg_.full_rank_output_gate) {
    jobs.push_back(from_x(p_.g_proj, gate.data()));
  } else {
    low_g.resize(size_t(T * p_.g_a.rows));
    jobs.push_back(from_x(p_.g_a, low_g.data()));
  }
  linear_batch(jobs);
  jobs = {{f32_rows(low_f.data(), T, p_.f_b.cols), p_.f_b, f32_rows(g.data(), T, p_.f_b.rows)}};
  if (!cfg_.full_rank_output_gate)
    jobs.push_back({f32_rows(low_g.data(), T, p_.g_b.cols), p_.g_b, f32_rows(gate.data(), T, p_.g_b.rows)});
  linear_batch(jobs);
  std::vector<float> initial_conv;  // f32 [n_seq, 3, P, w], only when checkpoints are emitted
  const bool any_emit =
      std::any_of(io.begin(), io.end(), [](const KdaSeqIO& s) { return !s.emit_after.empty(); });
  if (any_emit) initial_conv.resize(size_t(batch.n_seq()) * 3 * P * w);
  for (int s = 0; s < batch.n_seq(); ++s) {
    const KdaStateView& st = io[size_t(s)].state;
    if (any_emit) std::copy_n(st.conv, 3 * P * w, initial_conv.begin() + s * 3 * P * w);
    const int64_t b = batch.begin(s), n = batch.len(s);
    const float* taps[3] = {p_.conv_q.data(), p_.conv_k.data(), p_.conv_v.data()};
    for (int i = 0; i < 3; ++i)
      short_conv_silu(f32_rows(pre.data() + i * TP + b * P, n, P),
                      TensorView::contiguous(const_cast<float*>(taps[i]), DType::F32, {P, W}),
                      f32_vec(st.conv + i * P * w, P * w), f32_rows(qkv.data() + i * TP + b * P, n, P));
  }
  float* q = qkv.data();
  float* k = qkv.data() + TP;
  const float* v = qkv.data() + 2 * TP;

  decay_gate(g.data(), T, g.data());
  sigmoid(f32_vec(beta.data(), T * H), f32_vec(beta.data(), T * H));
  if (trace) trace->q.assign(q, q + TP), trace->k.assign(k, k + TP), trace->v.assign(v, v + TP);
  if (trace) trace->g = g, trace->beta = beta;
  l2norm_rows(f32_rows(q, T * H, K), kQkL2Eps);
  l2norm_rows(f32_rows(k, T * H, K), kQkL2Eps);

  std::vector<float> o(TP);
  run_core(batch, io, q, k, v, g.data(), beta.data(), o.data());
  for (int s = 0; s < batch.n_seq(); ++s) {  // conv windows of the emitted checkpoints
    const KdaSeqIO& sio = io[size_t(s)];
    for (size_t e = 0; e < sio.emit_after.size(); ++e) {
      const int64_t b = batch.begin(s);
      const float* rows[3] = {pre.data() + b * P, pre.data() + TP + b * P, pre.data() + 2 * TP + b * P};
      conv_window_at(initial_conv.data() + s * 3 * P * w, rows, P, w, sio.emit_after[e], sio.emit_to[e].conv);
    }
  }

  rmsnorm_gated_sigmoid(f32_rows(o.data(), T * H, K), f32_rows(gate.data(), T * H, K),
                        f32_vec(p_.o_norm.data(), K), rms_eps_, f32_rows(o.data(), T * H, K));
  linear(f32_rows(o.data(), T, p_.o_proj.cols), p_.o_proj, f32_rows(y, T, p_.o_proj.rows));
}

// KDA core per sequence. Checkpoints at offsets the chunked kernel can emit (chunk multiples or
// the piece end) use its boundary emission; any other offset splits the piece there.
void KdaLayer::run_core(const LayerBatch& batch, std::span<const KdaSeqIO> io, const float* q, const float* k,
                        const float* v, const float* g, const float* beta, float* o) const {
  const int64_t H = cfg_.n_head, K = cfg_.head_dim, P = H * K;
  const float scale = 1.0f / std::sqrt(float(K));
  // Short pieces without checkpoints (every sequence of a decode step) take the recurrent kernel
  // together: one batch over sequences × heads instead of one call each.
  std::vector<KdaRecurrentJob> together;
  std::vector<bool> done(static_cast<size_t>(batch.n_seq()), false);
  for (int s = 0; s < batch.n_seq(); ++s) {
    const int64_t b = batch.begin(s), n = batch.len(s);
    if (n == 0 || n > opt_.recurrent_max_tokens || !io[size_t(s)].emit_after.empty()) continue;
    float* S = io[size_t(s)].state.S;
    together.push_back(
        {{n, H, K, K}, {q + b * P, k + b * P, v + b * P, g + b * P, beta + b * H, S, o + b * P}});
    done[size_t(s)] = true;
  }
  kda_recurrent_batch(together, scale);
  for (int s = 0; s < batch.n_seq(); ++s) {
    if (done[size_t(s)]) continue;
    const KdaSeqIO& sio = io[size_t(s)];
    const KdaStateView& st = sio.state;
    const int64_t b = batch.begin(s), n = batch.len(s);
    size_t e = 0;
    int64_t seg0 = 0;
    while (seg0 < n) {
      // Segment end: the first offset the kernel cannot emit from seg0, else the piece end.
      int64_t seg1 = n;
      std::vector<int64_t> emit_rel;
      std::vector<float*> out_ptr;
      size_t e_end = e;
      for (; e_end < sio.emit_after.size(); ++e_end) {
        const int64_t rel = sio.emit_after[e_end] - seg0;
        const bool aligned = rel % opt_.chunk == 0 || sio.emit_after[e_end] == n;
        out_ptr.push_back(sio.emit_to[e_end].S);
        if (!aligned) {
          seg1 = sio.emit_after[e_end];
          emit_rel.push_back(seg1 - seg0);
          ++e_end;
          break;
        }
        emit_rel.push_back(rel);
      }
      const int64_t len = seg1 - seg0;
      const KdaDims d{len, H, K, K};
      const int64_t r0 = b + seg0;
      const KdaTensors t{q + r0 * P, k + r0 * P, v + r0 * P, g + r0 * P, beta + r0 * H, st.S, o + r0 * P};
      if (len <= opt_.recurrent_max_tokens) {
        int64_t ran = 0;  // recurrent: run up to each requested offset, then copy S
        for (size_t i = 0; i <= emit_rel.size(); ++i) {
          const int64_t upto = i < emit_rel.size() ? emit_rel[i] : len;
          const int64_t a = r0 + ran;
          const KdaTensors ts{q + a * P, k + a * P, v + a * P, g + a * P, beta + a * H, st.S, o + a * P};
          if (upto > ran) kda_recurrent(KdaDims{upto - ran, H, K, K}, ts, scale);
          if (i < emit_rel.size()) std::copy_n(st.S, st.shape.s_floats(), out_ptr[i]);
          ran = upto;
        }
      } else {
        kda_chunked(d, t, scale, opt_.chunk, emit_rel, out_ptr);
      }
      e = e_end;
      seg0 = seg1;
    }
  }
}

}  // namespace ds
