// KdaLayer: one Kimi Delta Attention mixer (Kimi Linear HF `modeling_kimi.py`, fla `fla/layers/kda.py`)
// over a packed batch of sequences:
// q/k/v projections, causal short conv with the carried window + SiLU, per-head L2 norm (eps 1e-6),
// low-rank forget gate, beta = sigmoid, the KDA core (chunked for prefill, recurrent for decode),
// per-head gated RMSNorm with the low-rank output gate, o_proj. Reads and advances each sequence's
// state through a KdaStateView, and writes checkpoint states into the views it is given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/weight_view.h"
#include "layers/kda_state.h"
#include "layers/layer_batch.h"
#include "model/model_config.h"

namespace ds {

struct KdaParams {
  WeightView q_proj, k_proj, v_proj;          // [P, D] each, P = H*K
  WeightView f_a, f_b;                        // [r, D], [P, r]  forget-gate low rank
  WeightView b_proj;                          // [H, D]          beta logits
  WeightView g_a, g_b;                        // [r, D], [P, r]  output-gate low rank
  WeightView o_proj;                          // [D, P]
  std::vector<float> conv_q, conv_k, conv_v;  // f32 [P, W] depthwise taps (tap W-1 = current)
  std::vector<float> a_log;                   // f32 [H]
  std::vector<float> dt_bias;                 // f32 [P]
  std::vector<float> o_norm;                  // f32 [K] shared by all heads
  WeightView g_proj;  // [P, D] full-rank output gate (K3 use_full_rank_gate), else unset
};

// Options that change the schedule, never the math (up to f32 rounding).
struct KdaRunOptions {
  int64_t chunk = 64;                // chunked-KDA chunk size
  int64_t recurrent_max_tokens = 1;  // pieces this short use the recurrent kernel
};

// Per sequence: its state and where to copy the state out (offsets in (0, n_new], ascending).
struct KdaSeqIO {
  KdaStateView state;                     // read, then advanced by the sequence's new tokens
  std::span<const int64_t> emit_after;    // token offsets within this piece
  std::span<const KdaStateView> emit_to;  // one destination per emit_after entry
};

// Intermediates of one forward, for the golden unit test (filled only when requested).
struct KdaTrace {
  std::vector<float> q, k, v;  // f32 [T, H, K] after conv + SiLU, before L2 norm
  std::vector<float> g;        // f32 [T, H, K] activated log-decay
  std::vector<float> beta;     // f32 [T, H]
};

class KdaLayer {
 public:
  KdaLayer(const KdaConfig& cfg, float rms_norm_eps, int64_t hidden, KdaParams params,
           KdaRunOptions opt = {});

  // y f32 [T, D] = KDA(x f32 [T, D]) for the packed batch; io has one entry per sequence.
  void forward(const LayerBatch& batch, std::span<const KdaSeqIO> io, const float* x, float* y,
               KdaTrace* trace = nullptr) const;

  const KdaConfig& config() const { return cfg_; }

 private:
  void decay_gate(const float* f, int64_t T, float* g) const;  // f -> g in place-safe
  void run_core(const LayerBatch& batch, std::span<const KdaSeqIO> io, const float* q, const float* k,
                const float* v, const float* g, const float* beta, float* o) const;

  KdaConfig cfg_;
  float rms_eps_;
  int64_t hidden_;
  KdaParams p_;
  KdaRunOptions opt_;
};

}  // namespace ds
