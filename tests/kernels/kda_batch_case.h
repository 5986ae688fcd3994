// Test helpers for the batched KDA ops (kernels/kda.h kda_prefill / kda_decode): random inputs of
// a given shape and gate form, host buffers in bf16 or f32 (bf16 inputs are the f32 values rounded,
// so both representations hold the same numbers), and an independent oracle built from the
// per-token recurrence (kernels/cpu kda_recurrent_ref) on the activated inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/activation.h"
#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_gate.h"
#include "kernels/cpu/norm.h"
#include "kernels/kda.h"
#include "test_util.h"

namespace ds::test {

// Values stored as `dtype` (BF16: raw bits, F32: floats) in a byte vector.
struct HostTensor {
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> bytes;

  static HostTensor make(DType dt, int64_t rows, int64_t cols) {
    HostTensor t{dt, rows, cols, {}};
    t.bytes.assign(size_t(rows * cols) * dtype_size(dt), 0);
    return t;
  }
  float get(int64_t i) const {
    if (dtype == DType::BF16) {
      uint16_t u;
      std::memcpy(&u, bytes.data() + 2 * i, 2);
      return bf16_to_f32(u);
    }
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  void set(int64_t i, float x) {
    if (dtype == DType::BF16) {
      const uint16_t u = f32_to_bf16(x);
      std::memcpy(bytes.data() + 2 * i, &u, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &x, 4);
    }
  }
  std::vector<float> to_f32() const {
    std::vector<float> out(size_t(rows * cols));
    for (int64_t i = 0; i < rows * cols; ++i) out[size_t(i)] = get(i);
    return out;
  }
  TensorView view(const void* data, Device dev) const {
    return TensorView::matrix(const_cast<void*>(data), dtype, rows, cols, -1, dev);
  }
  TensorView view() const { return view(const_cast<uint8_t*>(bytes.data()), Device::Cpu); }
};

inline void fill_randn(HostTensor& t, std::mt19937& rng, float stddev, float mean = 0.0f) {
  std::normal_distribution<float> d(mean, stddev);
  for (int64_t i = 0; i < t.rows * t.cols; ++i) t.set(i, d(rng));
}

// Gate parameters. steep_heads: heads whose decay is strong enough (exp(A_log) = 16, softplus gate)
// that a 16-token half-chunk spans more than 77 nats — the CUDA prep kernel's exact pair path.
inline void make_gate_params(int64_t H, int64_t K, bool steep_heads, std::mt19937& rng,
                             std::vector<float>& a_log, std::vector<float>& dt_bias) {
  std::uniform_real_distribution<float> u(std::log(1.0f), std::log(16.0f));
  std::normal_distribution<float> n(0.0f, 0.5f);
  a_log.resize(size_t(H));
  for (int64_t h = 0; h < H; ++h) a_log[size_t(h)] = steep_heads && h % 2 == 1 ? std::log(16.0f) : u(rng);
  dt_bias.resize(size_t(H * K));
  for (float& x : dt_bias) x = steep_heads ? 1.0f + n(rng) : n(rng);
}

// A prefill case: N sequences, their slots and checkpoints, and the oracle's answers.
struct KdaPrefillCase {
  int64_t H = 0, K = 0, V = 0;
  std::optional<float> lower_bound;
  std::vector<int64_t> cu_seqlens{0};
  HostTensor q, k, v, f, b;
  std::vector<float> a_log, dt_bias;
  int64_t n_slots = 0;
  std::vector<float> pool;  // f32 [n_slots, H, K, V]: initial contents
  std::vector<int32_t> initial_slot, final_slot;
  std::vector<KdaCheckpointRequest> checkpoints;
  float scale = 0.0f;

  int64_t T() const { return cu_seqlens.back(); }
  int64_t N() const { return int64_t(cu_seqlens.size()) - 1; }
  int64_t state_size() const { return H * K * V; }

  // lens: sequence lengths; every sequence gets checkpoints after each `ck_every` tokens (0: none) and
  // at its end; odd sequences start from a random state in a slot.
  static KdaPrefillCase make(std::vector<int64_t> lens, int64_t H, int64_t K,
                             std::optional<float> lower_bound, DType dt, uint32_t seed, int64_t ck_every = 0,
                             bool steep = false) {
    std::mt19937 rng(seed);
    KdaPrefillCase c;
    c.H = H, c.K = K, c.V = K, c.lower_bound = lower_bound, c.scale = 1.0f / std::sqrt(float(K));
    for (int64_t n : lens) c.cu_seqlens.push_back(c.cu_seqlens.back() + n);
    const int64_t T = c.T(), P = H * K;
    c.q = HostTensor::make(dt, T, P), c.k = HostTensor::make(dt, T, P), c.v = HostTensor::make(dt, T, P);
    c.f = HostTensor::make(dt, T, P), c.b = HostTensor::make(dt, T, H);
    fill_randn(c.q, rng, 1.0f), fill_randn(c.k, rng, 1.0f), fill_randn(c.v, rng, 1.0f);
    fill_randn(c.f, rng, 1.5f), fill_randn(c.b, rng, 1.5f);
    make_gate_params(H, K, steep, rng, c.a_log, c.dt_bias);
    const int64_t N = c.N();
    c.n_slots = 2 * N + 4;
    for (int64_t n = 0; n < N; ++n) {
      int64_t n_ck = 0;
      if (ck_every > 0)
        for (int64_t p = ck_every; p < lens[size_t(n)]; p += ck_every) ++n_ck;
      c.n_slots += n_ck + 1;
    }
    c.pool.assign(size_t(c.n_slots * c.state_size()), 0.0f);
    std::normal_distribution<float> sd(0.0f, 0.3f);
    for (float& x : c.pool) x = sd(rng);
    int32_t next = 0;
    for (int64_t n = 0; n < N; ++n) {
      c.initial_slot.push_back(n % 2 == 1 ? next : -1);
      c.final_slot.push_back(n % 3 == 1 ? next : next + 1);  // some sequences end in their own slot
      next += 2;
    }
    for (int64_t n = 0; n < N; ++n) {
      const int64_t len = lens[size_t(n)];
      if (ck_every > 0)
        for (int64_t p = ck_every; p < len; p += ck_every) c.checkpoints.push_back({int32_t(n), next++, p});
      if (len > 0) c.checkpoints.push_back({int32_t(n), next++, len});
    }
    return c;
  }

  KdaGate gate(Device dev, const float* a_log_p, const float* dt_p) const {
    return KdaGate{lower_bound, f32_vec(a_log_p, H, dev), f32_vec(dt_p, H * K, dev)};
  }

  // Args over the given buffers (host or device), pool of n_slots slots.
  KdaPrefillArgs args(Device dev, const void* qp, const void* kp, const void* vp, const void* fp,
                      const void* bp, void* op, float* poolp, const float* a_log_p, const float* dt_p) const {
    KdaPrefillArgs a;
    a.H = H, a.K = K, a.V = V;
    a.cu_seqlens = cu_seqlens;
    a.q = q.view(qp, dev), a.k = k.view(kp, dev), a.v = v.view(vp, dev), a.f = f.view(fp, dev);
    a.b = b.view(bp, dev), a.o = v.view(op, dev);
    a.gate = gate(dev, a_log_p, dt_p);
    a.scale = scale;
    a.pool = KdaStatePool{poolp, state_size(), n_slots, dev};
    a.initial_slot = initial_slot, a.final_slot = final_slot, a.checkpoints = checkpoints;
    return a;
  }

  // Oracle: o f32 [T, H*V] and the pool after the call, from the per-token recurrence.
  void oracle(std::vector<float>& o, std::vector<float>& pool_out) const {
    const int64_t P = H * K;
    std::vector<float> qf = q.to_f32(), kf = k.to_f32(), vf = v.to_f32(), g = f.to_f32(), beta = b.to_f32();
    cpu::l2norm_rows(qf.data(), T() * H, K, kKdaQkL2Eps);
    cpu::l2norm_rows(kf.data(), T() * H, K, kKdaQkL2Eps);
    cpu::kda_decay_gate(lower_bound, g.data(), T(), int(H), int(K), a_log.data(), dt_bias.data(), g.data());
    for (float& x : beta) x = sigmoidf(x);
    o.assign(size_t(T() * H * V), 0.0f);
    pool_out = pool;
    size_t ci = 0;
    for (int64_t n = 0; n < N(); ++n) {
      const int64_t r0 = cu_seqlens[size_t(n)], len = cu_seqlens[size_t(n) + 1] - r0;
      std::vector<float> S(size_t(state_size()), 0.0f);
      if (initial_slot[size_t(n)] >= 0)
        std::copy_n(pool.begin() + initial_slot[size_t(n)] * state_size(), state_size(), S.begin());
      for (int64_t t = 0; t < len; ++t) {
        const int64_t r = r0 + t;
        cpu::kda_recurrent_ref(
            KdaDims{1, H, K, V},
            KdaTensors{qf.data() + r * P, kf.data() + r * P, vf.data() + r * H * V, g.data() + r * P,
                       beta.data() + r * H, S.data(), o.data() + r * H * V},
            scale);
        for (; ci < checkpoints.size() && checkpoints[ci].seq == n && checkpoints[ci].after_tokens == t + 1;
             ++ci)
          std::copy(S.begin(), S.end(), pool_out.begin() + checkpoints[ci].slot * state_size());
      }
      std::copy(S.begin(), S.end(), pool_out.begin() + final_slot[size_t(n)] * state_size());
    }
  }
};

// A decode case: B sequences with one token each, states and conv windows in shuffled pool slots.
struct KdaDecodeCase {
  int64_t B = 0, H = 0, K = 0, W = 4;
  std::optional<float> lower_bound;
  HostTensor q, k, v, f, b, r;
  std::vector<float> taps, o_norm, a_log, dt_bias;  // taps f32 [3, H*K, W]
  int64_t n_slots = 0;
  std::vector<float> pool, conv;  // f32 [n_slots, H, K, K], [n_slots, 3, H*K, W-1]
  std::vector<int32_t> slots;
  float scale = 0.0f, eps = 1e-5f;

  int64_t state_size() const { return H * K * K; }
  int64_t conv_size() const { return 3 * H * K * (W - 1); }

  static KdaDecodeCase make(int64_t B, int64_t H, int64_t K, std::optional<float> lower_bound, DType dt,
                            uint32_t seed) {
    std::mt19937 rng(seed);
    KdaDecodeCase c;
    c.B = B, c.H = H, c.K = K, c.lower_bound = lower_bound, c.scale = 1.0f / std::sqrt(float(K));
    const int64_t P = H * K;
    for (HostTensor* t : {&c.q, &c.k, &c.v, &c.f, &c.r})
      *t = HostTensor::make(dt, B, P), fill_randn(*t, rng, 1.0f);
    c.b = HostTensor::make(dt, B, H), fill_randn(c.b, rng, 1.5f);
    std::normal_distribution<float> n(0.0f, 0.5f);
    c.taps.resize(size_t(3 * P * c.W));
    for (float& x : c.taps) x = n(rng);
    c.o_norm.resize(size_t(K));
    for (float& x : c.o_norm) x = 1.0f + n(rng);
    make_gate_params(H, K, false, rng, c.a_log, c.dt_bias);
    c.n_slots = 2 * B + 3;
    c.pool.resize(size_t(c.n_slots * c.state_size()));
    c.conv.resize(size_t(c.n_slots * c.conv_size()));
    std::normal_distribution<float> sd(0.0f, 0.3f);
    for (float& x : c.pool) x = sd(rng);
    for (float& x : c.conv) x = sd(rng);
    std::vector<int32_t> perm(size_t(c.n_slots));
    for (int32_t i = 0; i < int32_t(c.n_slots); ++i) perm[size_t(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    c.slots.assign(perm.begin(), perm.begin() + B);
    return c;
  }

  KdaDecodeArgs args(Device dev, const void* qp, const void* kp, const void* vp, const void* fp,
                     const void* bp, const void* rp, void* yp, float* poolp, float* convp, const float* tapsp,
                     const float* normp, const float* a_log_p, const float* dt_p, int32_t* slotsp) const {
    KdaDecodeArgs a;
    a.B = B, a.H = H, a.K = K, a.V = K, a.W = W;
    a.q_pre = q.view(qp, dev), a.k_pre = k.view(kp, dev), a.v_pre = v.view(vp, dev);
    a.f = f.view(fp, dev), a.b = b.view(bp, dev), a.r = r.view(rp, dev), a.y = r.view(yp, dev);
    a.conv_taps = f32_vec(tapsp, 3 * H * K * W, dev), a.o_norm = f32_vec(normp, K, dev);
    a.gate = KdaGate{lower_bound, f32_vec(a_log_p, H, dev), f32_vec(dt_p, H * K, dev)};
    a.scale = scale, a.norm_eps = eps;
    a.pool = KdaStatePool{poolp, state_size(), n_slots, dev};
    a.conv_data = convp, a.conv_slot_stride = conv_size();
    a.slots = TensorView::contiguous(slotsp, DType::I32, {B}, dev);
    return a;
  }

  // Runs the CPU implementation on copies: y f32 [B, H*K], pool and conv pool after the step.
  void reference(std::vector<float>& y, std::vector<float>& pool_out, std::vector<float>& conv_out) const {
    KdaDecodeCase c = *this;  // f32 activations holding the same values
    for (HostTensor* t : {&c.q, &c.k, &c.v, &c.f, &c.b, &c.r}) *t = as_f32(*t);
    HostTensor yt = HostTensor::make(DType::F32, B, H * K);
    kda_decode(c.args(Device::Cpu, c.q.bytes.data(), c.k.bytes.data(), c.v.bytes.data(), c.f.bytes.data(),
                      c.b.bytes.data(), c.r.bytes.data(), yt.bytes.data(), c.pool.data(), c.conv.data(),
                      c.taps.data(), c.o_norm.data(), c.a_log.data(), c.dt_bias.data(), c.slots.data()));
    y = yt.to_f32(), pool_out = std::move(c.pool), conv_out = std::move(c.conv);
  }

  static HostTensor as_f32(const HostTensor& t) {
    HostTensor o = HostTensor::make(DType::F32, t.rows, t.cols);
    for (int64_t i = 0; i < t.rows * t.cols; ++i) o.set(i, t.get(i));
    return o;
  }
};

// ‖a − b‖ / ‖b‖ over n values (NaN anywhere gives NaN, which fails every bound).
inline double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d, den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

}  // namespace ds::test
