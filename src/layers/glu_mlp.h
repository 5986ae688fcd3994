// GluMlp: the gated feed-forward block y = down( act(gate·x) ⊙ (up·x) ) used by the dense MLP
// layers, every routed expert and the shared experts. The activation is chosen in one place
// (glu_activate) so K3's SiTU-GLU plugs in there. Weights are non-owning checkpoint views.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/weight_view.h"
#include "layers/situ.h"
#include "model/model_config.h"

namespace ds {

// out[i] = act(gate[i]) * up[i] for i < n (f32). out may alias gate or up. `situ` holds the
// SiTU-GLU betas (K3, model-spec §7.5) when act == Situ.
void glu_activate(Activation act, const float* gate, const float* up, int64_t n, float* out,
                  const SituParams& situ = {});

struct GluMlp {
  WeightView gate;  // [I, D]
  WeightView up;    // [I, D]
  WeightView down;  // [D, I]
  Activation act = Activation::Silu;
  SituParams situ;  // activation_situ_beta / activation_situ_linear_beta when act == Situ

  int64_t hidden() const { return gate.cols; }        // D
  int64_t intermediate() const { return gate.rows; }  // I
  void validate(const char* what) const;              // shapes agree; throws naming `what`

  // y f32 [T, D] = MLP(x f32 [T, D]); overwrites y, or adds to it when `accumulate`.
  void forward(const float* x, int64_t T, float* y, bool accumulate = false) const;
};

}  // namespace ds
