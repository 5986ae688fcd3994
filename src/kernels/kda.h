// KDA (Kimi Delta Attention), one interface for every device.
//
// Math (per head, state S [K, V], rows = key dims; Kimi-Linear / HF layout):
//   S ← Diag(exp(g_t)) S;  e = v_t − Sᵀk_t;  S ← S + β_t k_t eᵀ;  o_t = Sᵀ(scale · q_t)
// with q, k L2-normalised per head (eps 1e-6 inside the sqrt), β = sigmoid(b) and the log-decay g
// from one of two gates (kda_decay_gate below).
//
// Two levels:
// - per-sequence core on activated f32 inputs (kda_recurrent, kda_chunked): the CPU reference path
//   the layers use today and the oracle every other implementation is tested against;
// - batched ops over a state pool (kda_prefill, kda_decode): raw projections in, gates, norms and β
//   fused, states read from and written to pool slots, prefix-cache checkpoints emitted into slots.
//   These have CPU and CUDA implementations; the CPU one is the CUDA one's test reference.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/tensor_view.h"

namespace ds {

inline constexpr float kKdaQkL2Eps = 1e-6f;  // fla l2norm eps

// ---- per-sequence core (f32, host) ----------------------------------------------------------

struct KdaDims {
  int64_t T = 0;  // tokens of this sequence in this call
  int64_t H = 0;  // heads
  int64_t K = 0;  // key head dim
  int64_t V = 0;  // value head dim
};

// Tensors of one call (host memory). q,k,g f32 [T, H, K]; v f32 [T, H, V]; beta f32 [T, H];
// S f32 [H, K, V] in/out (initial state in, final state out); o f32 [T, H, V] out.
struct KdaTensors {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* g = nullptr;
  const float* beta = nullptr;
  float* S = nullptr;
  float* o = nullptr;
};

// Per-token recurrence, optimised for decode (few tokens). Throws ds::Error on bad dims.
void kda_recurrent(const KdaDims& d, const KdaTensors& t, float scale);

// Independent recurrences (e.g. every sequence of a decode step, one token each) in one call, with
// the results of kda_recurrent per job; the CPU runs them in one parallel region. States and
// outputs must not overlap between jobs.
struct KdaRecurrentJob {
  KdaDims d;
  KdaTensors t;
};
void kda_recurrent_batch(std::span<const KdaRecurrentJob> jobs, float scale);

// Chunked prefill (WY/UT form, chunk size `chunk`, T need not be a multiple of it).
// emit_at: strictly increasing token counts in (0, T], each a multiple of `chunk` or == T;
// emit_states[i] receives the state after emit_at[i] tokens, f32 [H, K, V].
void kda_chunked(const KdaDims& d, const KdaTensors& t, float scale, int64_t chunk = 64,
                 std::span<const int64_t> emit_at = {}, std::span<float* const> emit_states = {});

// ---- decay gate ------------------------------------------------------------------------------

// lower_bound set (K3, config gate_lower_bound):  g = lb · sigmoid(exp(A_log[h]) · (f + dt_bias)),
//   g ∈ (lb, 0) — the "safe" gate;
// absent (Kimi Linear):                           g = −exp(A_log[h]) · softplus(f + dt_bias),
//   g ∈ (−∞, 0], softplus with torch's threshold 20.
struct KdaGate {
  std::optional<float> lower_bound;
  TensorView a_log;    // f32 [H]
  TensorView dt_bias;  // f32 [H*K]
};

// g f32 [T, H*K] from f f32 [T, H*K] (may alias). Throws ds::Error on a non-negative lower bound.
void kda_decay_gate(const TensorView& f, const KdaGate& gate, int64_t H, int64_t K, const TensorView& g);

// ---- batched ops over a state pool ------------------------------------------------------------

// Recurrent states of one layer: slot i's S f32 [H, K, V] starts at data + i * slot_stride.
struct KdaStatePool {
  float* data = nullptr;
  int64_t slot_stride = 0;  // elements, >= H*K*V
  int64_t n_slots = 0;
  Device device = Device::Cpu;
};

// "Copy the state after `after_tokens` of sequence `seq`'s new tokens into `slot`."
struct KdaCheckpointRequest {
  int32_t seq = 0;
  int32_t slot = 0;
  int64_t after_tokens = 0;  // in (0, len]; CPU chunked form: a multiple of kKdaCheckpointAlign or == len
};

// Positions the batched prefill can emit without splitting its work (tokens, from the call's start).
// The CPU's chunked form emits only there (or at a sequence's end); the CUDA kernel anywhere, by
// cutting the chunk holding the position short there (a partial chunk and one more segment).
inline constexpr int64_t kKdaCheckpointAlign = 16;

// Variable-length prefill of N sequences packed along T (rows cu_seqlens[n] .. cu_seqlens[n+1]).
// Activations are bf16 or f32 (all the same), on `device`:
//   q, k [T, H*K]: after the short conv + SiLU, before the L2 norm (normalised inside);
//   v [T, H*V]; f [T, H*K]: gate pre-activation (dt_bias is added inside);
//   b [T, H]: β logits (sigmoid inside); o [T, H*V]: core output (before the output norm).
// States: initial from pool slot initial_slot[n] (−1: zeros), final to final_slot[n] (may equal
// the initial slot), checkpoints sorted by (seq, after_tokens). K == V == 128 on CUDA.
struct KdaPrefillArgs {
  int64_t H = 0, K = 0, V = 0;
  std::span<const int64_t> cu_seqlens;  // host [N + 1], cu_seqlens[0] == 0
  TensorView q, k, v, f, b, o;
  KdaGate gate;
  float scale = 0.0f;  // usually 1/sqrt(K)
  KdaStatePool pool;
  std::span<const int32_t> initial_slot;  // host [N]
  std::span<const int32_t> final_slot;    // host [N]
  std::span<const KdaCheckpointRequest> checkpoints;
  void* stream = nullptr;  // CUDA stream (cudaStream_t); nullptr = the default stream
  // The per-token f32 recurrence (the oracle's order of operations) instead of the chunked form:
  // f32 activations, checkpoints after any number of tokens; on CUDA one CTA per (sequence, head)
  // walks the tokens (slow, exact: the f32 mode of the device forward).
  bool exact = false;
};

void kda_prefill(const KdaPrefillArgs& a);

// One new token for each of B sequences whose states sit in arbitrary pool slots (decode):
// fused short-conv step (window in the conv pool), SiLU, L2 norm, gate, β, delta-rule update and
// the gated RMSNorm output y = RMSNorm(o) · o_norm ⊙ sigmoid(r).
//   q_pre, k_pre [B, H*K], v_pre [B, H*V]: projections before the conv; f [B, H*K]; b [B, H];
//   r [B, H*V]: output-gate logits; y [B, H*V] out. Activations bf16 or f32 (all the same).
//   conv_taps: f32 [3, H*K, W] (q, k, v taps; requires K == V); o_norm f32 [V].
//   conv pool: slot i's windows f32 [3, H*K, W-1] (oldest first) at conv_data + i * conv_slot_stride.
//   slots: i32 [B] on `device` (device memory on CUDA, so that a captured graph can replay it).
struct KdaDecodeArgs {
  int64_t B = 0, H = 0, K = 0, V = 0, W = 0;
  TensorView q_pre, k_pre, v_pre, f, b, r, y;
  TensorView conv_taps, o_norm;
  KdaGate gate;
  float scale = 0.0f, norm_eps = 1e-5f;
  KdaStatePool pool;
  float* conv_data = nullptr;
  int64_t conv_slot_stride = 0;  // elements, >= 3*H*K*(W-1)
  TensorView slots;
  void* stream = nullptr;
  // The caller's promise that the kernel issued just before this call on `stream` writes none of
  // the slot indices, conv windows and states read here (it may write the activations): the CUDA
  // kernel may then load them while that kernel is still finishing (programmatic dependent launch,
  // non-null streams). Leave false when the previous kernel may be a decode or prefill on the same
  // slots. Ignored on the CPU.
  bool overlap_prior_kernel = false;
};

void kda_decode(const KdaDecodeArgs& a);

}  // namespace ds
