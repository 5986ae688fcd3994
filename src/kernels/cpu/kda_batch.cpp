#include "kernels/cpu/kda_batch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_gate.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/short_conv.h"

namespace ds::cpu {
namespace {

// Rows [r0, r0 + n) of a row view (f32 or bf16) as f32 [n, cols].
void rows_to_f32(const TensorView& v, int64_t r0, int64_t n, float* out) {
  const int64_t cols = v.shape[1];
  for (int64_t r = 0; r < n; ++r) {
    float* dst = out + r * cols;
    if (v.dtype == DType::F32) {
      std::memcpy(dst, static_cast<const float*>(v.data) + (r0 + r) * v.stride[0],
                  size_t(cols) * sizeof(float));
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(v.data) + (r0 + r) * v.stride[0];
      for (int64_t c = 0; c < cols; ++c) dst[c] = bf16_to_f32(src[c]);
    }
  }
}

// f32 [n, cols] -> rows [r0, r0 + n) of a row view (f32 or bf16, round to nearest even).
void f32_to_rows(const float* in, int64_t r0, int64_t n, const TensorView& v) {
  const int64_t cols = v.shape[1];
  for (int64_t r = 0; r < n; ++r) {
    const float* src = in + r * cols;
    if (v.dtype == DType::F32) {
      std::memcpy(static_cast<float*>(v.data) + (r0 + r) * v.stride[0], src, size_t(cols) * sizeof(float));
    } else {
      uint16_t* dst = static_cast<uint16_t*>(v.data) + (r0 + r) * v.stride[0];
      for (int64_t c = 0; c < cols; ++c) dst[c] = f32_to_bf16(src[c]);
    }
  }
}

float* slot_state(const KdaStatePool& pool, int32_t slot) {
  return pool.data + int64_t(slot) * pool.slot_stride;
}

// Activated inputs of n rows starting at r0: L2-normalised q, k; gate g; β.
struct Activated {
  std::vector<float> q, k, v, g, beta;
};

Activated activate(const KdaPrefillArgs& a, int64_t r0, int64_t n) {
  const int64_t H = a.H, K = a.K, V = a.V;
  Activated x;
  x.q.resize(size_t(n * H * K)), x.k.resize(x.q.size()), x.g.resize(x.q.size());
  x.v.resize(size_t(n * H * V)), x.beta.resize(size_t(n * H));
  rows_to_f32(a.q, r0, n, x.q.data());
  rows_to_f32(a.k, r0, n, x.k.data());
  rows_to_f32(a.v, r0, n, x.v.data());
  rows_to_f32(a.f, r0, n, x.g.data());
  rows_to_f32(a.b, r0, n, x.beta.data());
  l2norm_rows(x.q.data(), n * H, K, kKdaQkL2Eps);
  l2norm_rows(x.k.data(), n * H, K, kKdaQkL2Eps);
  kda_decay_gate(a.gate.lower_bound, x.g.data(), n, int(H), int(K),
                 static_cast<const float*>(a.gate.a_log.data), static_cast<const float*>(a.gate.dt_bias.data),
                 x.g.data());
  for (float& b : x.beta) b = sigmoidf(b);
  return x;
}

}  // namespace

void kda_prefill(const KdaPrefillArgs& a) {
  const int64_t H = a.H, K = a.K, V = a.V, state_size = H * K * V;
  const int64_t N = int64_t(a.cu_seqlens.size()) - 1;
  size_t c = 0;  // next checkpoint request
  for (int64_t n = 0; n < N; ++n) {
    const int64_t r0 = a.cu_seqlens[size_t(n)], len = a.cu_seqlens[size_t(n) + 1] - r0;
    std::vector<float> S(size_t(state_size), 0.0f);
    if (a.initial_slot[size_t(n)] >= 0)
      std::copy_n(slot_state(a.pool, a.initial_slot[size_t(n)]), state_size, S.data());
    std::vector<int64_t> emit_at;
    std::vector<float*> emit_to;
    for (; c < a.checkpoints.size() && a.checkpoints[c].seq == n; ++c) {
      emit_at.push_back(a.checkpoints[c].after_tokens);
      emit_to.push_back(slot_state(a.pool, a.checkpoints[c].slot));
    }
    if (len > 0 && a.exact) {
      const Activated x = activate(a, r0, len);
      std::vector<float> o(size_t(len * H * V));
      int64_t done = 0;  // run up to each checkpoint, copy S there, then on to the end
      for (size_t i = 0; i <= emit_at.size(); ++i) {
        const int64_t upto = i < emit_at.size() ? emit_at[i] : len;
        const size_t qk = size_t(done * H * K), vv = size_t(done * H * V);
        if (upto > done)
          cpu::kda_recurrent(KdaDims{upto - done, H, K, V},
                             KdaTensors{x.q.data() + qk, x.k.data() + qk, x.v.data() + vv, x.g.data() + qk,
                                        x.beta.data() + done * H, S.data(), o.data() + vv},
                             a.scale);
        if (i < emit_at.size()) std::copy(S.begin(), S.end(), emit_to[i]);
        done = upto;
      }
      f32_to_rows(o.data(), r0, len, a.o);
    } else if (len > 0) {
      const Activated x = activate(a, r0, len);
      std::vector<float> o(size_t(len * H * V));
      const bool by64 =
          std::all_of(emit_at.begin(), emit_at.end(), [&](int64_t p) { return p % 64 == 0 || p == len; });
      cpu::kda_chunked(
          KdaDims{len, H, K, V},
          KdaTensors{x.q.data(), x.k.data(), x.v.data(), x.g.data(), x.beta.data(), S.data(), o.data()},
          a.scale, by64 ? 64 : kKdaCheckpointAlign, emit_at, emit_to);
      f32_to_rows(o.data(), r0, len, a.o);
    }
    std::copy(S.begin(), S.end(), slot_state(a.pool, a.final_slot[size_t(n)]));
  }
}

void kda_decode(const KdaDecodeArgs& a) {
  const int64_t B = a.B, H = a.H, K = a.K, V = a.V, W = a.W, P = H * K;
  const float* taps = static_cast<const float*>(a.conv_taps.data);
  const int32_t* slots = static_cast<const int32_t*>(a.slots.data);
  std::vector<float> qkv(static_cast<size_t>(3 * P)), act(qkv.size()), g(static_cast<size_t>(P));
  std::vector<float> beta(static_cast<size_t>(H)), r(static_cast<size_t>(H * V)), o(r.size());
  for (int64_t i = 0; i < B; ++i) {
    float* conv = a.conv_data + int64_t(slots[i]) * a.conv_slot_stride;
    rows_to_f32(a.q_pre, i, 1, qkv.data());
    rows_to_f32(a.k_pre, i, 1, qkv.data() + P);
    rows_to_f32(a.v_pre, i, 1, qkv.data() + 2 * P);
    for (int j = 0; j < 3; ++j)
      short_conv_silu(qkv.data() + j * P, P, 1, P, taps + j * P * W, W, conv + j * P * (W - 1),
                      act.data() + j * P, P);
    l2norm_rows(act.data(), H, K, kKdaQkL2Eps);
    l2norm_rows(act.data() + P, H, K, kKdaQkL2Eps);
    rows_to_f32(a.f, i, 1, g.data());
    kda_decay_gate(a.gate.lower_bound, g.data(), 1, int(H), int(K),
                   static_cast<const float*>(a.gate.a_log.data),
                   static_cast<const float*>(a.gate.dt_bias.data), g.data());
    rows_to_f32(a.b, i, 1, beta.data());
    for (float& b : beta) b = sigmoidf(b);
    cpu::kda_recurrent(KdaDims{1, H, K, V},
                       KdaTensors{act.data(), act.data() + P, act.data() + 2 * P, g.data(), beta.data(),
                                  slot_state(a.pool, slots[i]), o.data()},
                       a.scale);
    rows_to_f32(a.r, i, 1, r.data());
    rmsnorm_gated_sigmoid(o.data(), r.data(), H, V, static_cast<const float*>(a.o_norm.data), a.norm_eps,
                          o.data());
    f32_to_rows(o.data(), i, 1, a.y);
  }
}

}  // namespace ds::cpu
