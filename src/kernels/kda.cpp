#include "kernels/kda.h"

#include "kernels/cpu/kda.h"
#include "kernels/cpu/kda_batch.h"
#include "kernels/cpu/kda_gate.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/kda.h"
#endif

namespace ds {
namespace {

// Row view [rows, cols] of bf16 or f32 with dtype `dt`.
void check_act(const char* op, const char* what, const TensorView& v, int64_t rows, int64_t cols, DType dt,
               Device device) {
  DS_CHECK(v.dtype == dt, "{}: {} is {}, the other activations are {}", op, what, dtype_name(v.dtype),
           dtype_name(dt));
  DS_CHECK(v.ndim == 2 && v.shape[0] == rows && v.shape[1] == cols,
           "{}: {} has shape [{}, {}], expected [{}, {}]", op, what, v.shape[0], v.shape[1], rows, cols);
  DS_CHECK(v.stride[1] == 1 && v.stride[0] >= cols, "{}: {} is not a row view", op, what);
  DS_CHECK(v.device == device, "{}: {} is in {} memory, expected {}", op, what, device_name(v.device),
           device_name(device));
  DS_CHECK(v.data != nullptr || rows == 0, "{}: {} has no data", op, what);
}

void check_gate(const char* op, const KdaGate& g, int64_t H, int64_t K, Device device) {
  detail::check_flat(op, "A_log", g.a_log, H);
  detail::check_flat(op, "dt_bias", g.dt_bias, H * K);
  check_same_device(op, device, {&g.a_log, &g.dt_bias});
  DS_CHECK(!g.lower_bound || *g.lower_bound < 0.0f, "{}: gate lower bound must be negative, got {}", op,
           *g.lower_bound);
}

void check_pool(const char* op, const KdaStatePool& p, int64_t state_size, Device device) {
  DS_CHECK(p.data != nullptr && p.n_slots > 0 && p.slot_stride >= state_size,
           "{}: state pool of {} slots, stride {} (state {} elements)", op, p.n_slots, p.slot_stride,
           state_size);
  DS_CHECK(p.device == device, "{}: state pool is in {} memory, activations in {}", op, device_name(p.device),
           device_name(device));
}

void check_slot(const char* op, const char* what, int64_t i, int32_t slot, int64_t n_slots, bool allow_none) {
  DS_CHECK((allow_none && slot == -1) || (slot >= 0 && slot < n_slots),
           "{}: sequence {} {} slot {} not in [0, {})", op, i, what, slot, n_slots);
}

#ifdef DS_HAVE_CUDA
constexpr void (*kCudaPrefill)(const KdaPrefillArgs&) = &cuda::kda_prefill;
constexpr void (*kCudaDecode)(const KdaDecodeArgs&) = &cuda::kda_decode;
#else
constexpr void (*kCudaPrefill)(const KdaPrefillArgs&) = nullptr;
constexpr void (*kCudaDecode)(const KdaDecodeArgs&) = nullptr;
#endif

// Runs the implementation for `dev`, or throws naming the missing backend.
template <class Args>
void run_on(const char* op, Device dev, const Args& a, void (*cpu_fn)(const Args&),
            void (*cuda_fn)(const Args&)) {
  if (dev == Device::Cpu) return cpu_fn(a);
  if (dev == Device::Cuda && cuda_fn != nullptr) return cuda_fn(a);
  detail::no_backend(op, dev);
}

}  // namespace

void kda_recurrent(const KdaDims& d, const KdaTensors& t, float scale) {
  cpu::kda_recurrent(d, t, scale);
}

void kda_recurrent_batch(std::span<const KdaRecurrentJob> jobs, float scale) {
  cpu::kda_recurrent_batch(jobs, scale);
}

void kda_chunked(const KdaDims& d, const KdaTensors& t, float scale, int64_t chunk,
                 std::span<const int64_t> emit_at, std::span<float* const> emit_states) {
  cpu::kda_chunked(d, t, scale, chunk, emit_at, emit_states);
}

void kda_decay_gate(const TensorView& f, const KdaGate& gate, int64_t H, int64_t K, const TensorView& g) {
  const int64_t T = f.ndim == 2 ? f.shape[0] : -1;
  detail::check_rows("kda_decay_gate", "f", f, T, H * K);
  detail::check_rows("kda_decay_gate", "g", g, T, H * K);
  DS_CHECK(T <= 1 || (f.stride[0] == H * K && g.stride[0] == H * K),
           "kda_decay_gate: rows must be contiguous");
  check_gate("kda_decay_gate", gate, H, K, f.device);
  check_same_device("kda_decay_gate", f.device, {&g});
  if (f.device != Device::Cpu) detail::no_backend("kda_decay_gate", f.device);
  cpu::kda_decay_gate(gate.lower_bound, static_cast<const float*>(f.data), T, int(H), int(K),
                      static_cast<const float*>(gate.a_log.data),
                      static_cast<const float*>(gate.dt_bias.data), static_cast<float*>(g.data));
}

void kda_prefill(const KdaPrefillArgs& a) {
  const char* op = "kda_prefill";
  DS_CHECK(a.H > 0 && a.K > 0 && a.V > 0, "{}: bad dims H {} K {} V {}", op, a.H, a.K, a.V);
  DS_CHECK(a.cu_seqlens.size() >= 2 && a.cu_seqlens[0] == 0, "{}: cu_seqlens needs N + 1 >= 2 entries from 0",
           op);
  const int64_t N = int64_t(a.cu_seqlens.size()) - 1;
  for (int64_t n = 0; n < N; ++n)
    DS_CHECK(a.cu_seqlens[size_t(n) + 1] >= a.cu_seqlens[size_t(n)], "{}: cu_seqlens decreases at {}", op, n);
  const int64_t T = a.cu_seqlens.back();
  const Device dev = a.q.device;
  const DType dt = a.q.dtype;
  DS_CHECK(dt == DType::F32 || dt == DType::BF16, "{}: activations are {}, f32 or bf16 required", op,
           dtype_name(dt));
  check_act(op, "q", a.q, T, a.H * a.K, dt, dev);
  check_act(op, "k", a.k, T, a.H * a.K, dt, dev);
  check_act(op, "v", a.v, T, a.H * a.V, dt, dev);
  check_act(op, "f", a.f, T, a.H * a.K, dt, dev);
  check_act(op, "b", a.b, T, a.H, dt, dev);
  check_act(op, "o", a.o, T, a.H * a.V, dt, dev);
  DS_CHECK(!a.exact || dt == DType::F32, "{}: the exact form takes f32 activations, got {}", op,
           dtype_name(dt));
  check_gate(op, a.gate, a.H, a.K, dev);
  check_pool(op, a.pool, a.H * a.K * a.V, dev);
  DS_CHECK(int64_t(a.initial_slot.size()) == N && int64_t(a.final_slot.size()) == N,
           "{}: {} initial and {} final slots for {} sequences", op, a.initial_slot.size(),
           a.final_slot.size(), N);
  for (int64_t n = 0; n < N; ++n) {
    check_slot(op, "initial", n, a.initial_slot[size_t(n)], a.pool.n_slots, true);
    check_slot(op, "final", n, a.final_slot[size_t(n)], a.pool.n_slots, false);
  }
  for (size_t i = 0; i < a.checkpoints.size(); ++i) {
    const KdaCheckpointRequest& c = a.checkpoints[i];
    DS_CHECK(c.seq >= 0 && c.seq < N, "{}: checkpoint {} names sequence {} of {}", op, i, c.seq, N);
    const int64_t len = a.cu_seqlens[size_t(c.seq) + 1] - a.cu_seqlens[size_t(c.seq)];
    DS_CHECK(c.after_tokens > 0 && c.after_tokens <= len &&
                 (c.after_tokens % kKdaCheckpointAlign == 0 || c.after_tokens == len || a.exact ||
                  dev == Device::Cuda),
             "{}: checkpoint after {} tokens of sequence {} (length {}) must be in (0, len] and, on the "
             "CPU's chunked form, a multiple of {} or the end",
             op, c.after_tokens, c.seq, len, kKdaCheckpointAlign);
    check_slot(op, "checkpoint", c.seq, c.slot, a.pool.n_slots, false);
    if (i > 0) {
      const KdaCheckpointRequest& p = a.checkpoints[i - 1];
      DS_CHECK(p.seq < c.seq || (p.seq == c.seq && p.after_tokens < c.after_tokens),
               "{}: checkpoints must be sorted by (sequence, position) without repeats (entry {})", op, i);
    }
  }
  run_on(op, dev, a, &cpu::kda_prefill, kCudaPrefill);
}

void kda_decode(const KdaDecodeArgs& a) {
  const char* op = "kda_decode";
  DS_CHECK(a.B >= 0 && a.H > 0 && a.K > 0 && a.V == a.K && a.W >= 2,
           "{}: bad dims B {} H {} K {} V {} W {} (K == V required)", op, a.B, a.H, a.K, a.V, a.W);
  const Device dev = a.q_pre.device;
  const DType dt = a.q_pre.dtype;
  DS_CHECK(dt == DType::F32 || dt == DType::BF16, "{}: activations are {}, f32 or bf16 required", op,
           dtype_name(dt));
  const int64_t P = a.H * a.K;
  check_act(op, "q_pre", a.q_pre, a.B, P, dt, dev);
  check_act(op, "k_pre", a.k_pre, a.B, P, dt, dev);
  check_act(op, "v_pre", a.v_pre, a.B, a.H * a.V, dt, dev);
  check_act(op, "f", a.f, a.B, P, dt, dev);
  check_act(op, "b", a.b, a.B, a.H, dt, dev);
  check_act(op, "r", a.r, a.B, a.H * a.V, dt, dev);
  check_act(op, "y", a.y, a.B, a.H * a.V, dt, dev);
  detail::check_flat(op, "conv_taps", a.conv_taps, 3 * P * a.W);
  detail::check_flat(op, "o_norm", a.o_norm, a.V);
  detail::check_flat(op, "slots", a.slots, a.B, DType::I32);
  check_same_device(op, dev, {&a.conv_taps, &a.o_norm, &a.slots});
  check_gate(op, a.gate, a.H, a.K, dev);
  check_pool(op, a.pool, a.H * a.K * a.V, dev);
  DS_CHECK(a.conv_data != nullptr && a.conv_slot_stride >= 3 * P * (a.W - 1),
           "{}: conv pool stride {} < {} elements", op, a.conv_slot_stride, 3 * P * (a.W - 1));
  if (dev == Device::Cpu) {  // device slots are checked by the CUDA kernel's caller
    const int32_t* s = static_cast<const int32_t*>(a.slots.data);
    for (int64_t i = 0; i < a.B; ++i) check_slot(op, "state", i, s[i], a.pool.n_slots, false);
  }
  run_on(op, dev, a, &cpu::kda_decode, kCudaDecode);
}

}  // namespace ds
