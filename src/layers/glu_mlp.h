// GluMlp: the gated feed-forward block y = down( act(gate·x) ⊙ (up·x) ) of the dense MLP layers,
// every routed expert and the shared experts. Weights are non-owning views, dense (F32/BF16) or
// MXFP4 (ExpertLinear); the activation is SiLU (SwiGLU) or K3's SiTU-GLU.
#pragma once

#include <cstdint>

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
};

}  // namespace ds
