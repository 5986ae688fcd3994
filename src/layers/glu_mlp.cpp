#include "layers/glu_mlp.h"

#include <vector>

#include "core/check.h"
#include "kernels/activation.h"

namespace ds {
namespace {

// out[i] = act(gate[i]) * up[i] for i < n (f32). out may alias gate or up.
void glu_activate(const GluMlp& m, const float* gate, const float* up, int64_t n, float* out) {
  switch (m.act) {
    case Activation::Silu:
      silu_mul(f32_vec(gate, n), f32_vec(up, n), f32_vec(out, n));
      return;
    case Activation::Situ:
      situ_glu({gate, size_t(n)}, {up, size_t(n)}, {out, size_t(n)}, m.situ);
      return;
  }
  fail("glu mlp: activation {} is not supported by the CPU forward", int(m.act));
}

}  // namespace

void GluMlp::validate(const char* what) const {
  gate.validate(what);
  up.validate(what);
  down.validate(what);
  DS_CHECK(up.rows() == gate.rows() && up.cols() == gate.cols() && down.rows() == gate.cols() &&
               down.cols() == gate.rows(),
           "{}: inconsistent MLP shapes gate [{}, {}] up [{}, {}] down [{}, {}]", what, gate.rows(),
           gate.cols(), up.rows(), up.cols(), down.rows(), down.cols());
}

void GluMlp::forward(const float* x, int64_t T, float* y, bool accumulate) const {
  if (T == 0) return;
  const int64_t I = intermediate();
  std::vector<float> g(size_t(T * I)), u(size_t(T * I));  // f32 [T, I]
  expert_linear(f32_rows(x, T, width()), gate, f32_rows(g.data(), T, I));
  expert_linear(f32_rows(x, T, width()), up, f32_rows(u.data(), T, I));
  glu_activate(*this, g.data(), u.data(), T * I, g.data());
  expert_linear(f32_rows(g.data(), T, I), down, f32_rows(y, T, down.rows()), accumulate);
}

}  // namespace ds
