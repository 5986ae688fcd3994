// GluMlp: the gated feed-forward block y = down( act(gate·x) ⊙ (up·x) ) of the dense MLP layers,
// every routed expert and the shared experts. Weights are non-owning views, dense (F32/BF16) or
// MXFP4 (ExpertLinear); the activation is SiLU (SwiGLU) or K3's SiTU-GLU.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/expert_linear.h"
#include "layers/situ.h"
#include "model/model_config.h"

namespace ds {

struct GluMlp {
  ExpertLinear gate;  // w1 [I, D]
  ExpertLinear up;    // w3 [I, D]
  ExpertLinear down;  // w2 [D, I]
  Activation act = Activation::Silu;
  SituParams situ;  // activation_situ_beta / activation_situ_linear_beta when act == Situ

  int64_t width() const { return gate.cols(); }         // D: input and output width
  int64_t intermediate() const { return gate.rows(); }  // I
  void validate(const char* what) const;                // shapes agree; throws naming `what`

  // y f32 [T, D] = MLP(x f32 [T, D]); overwrites y, or adds to it when `accumulate`.
  void forward(const float* x, int64_t T, float* y, bool accumulate = false) const;

  // Many MLPs of one width D over their own rows (an MoE layer's selected experts): mlps[i] maps x
  // rows [offsets[i], offsets[i+1]) to the same rows of y (overwritten); x, y f32 [offsets.back(), D].
  // With dense weights, all gate/up products run as one linear_batch, then all down products as a
  // second one (two parallel regions instead of three per MLP); MXFP4 weights run one MLP at a time.
  static void forward_grouped(std::span<const GluMlp* const> mlps, std::span<const int64_t> offsets,
                              const float* x, float* y);
};

}  // namespace ds
