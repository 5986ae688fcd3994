#include "layers/glu_mlp.h"

#include "core/check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"

namespace ds {

void glu_activate(Activation act, const float* gate, const float* up, int64_t n, float* out,
                  const SituParams& situ) {
  switch (act) {
    case Activation::Silu:
      silu_mul(gate, up, n, out);
      return;
    case Activation::Situ:
      situ_glu({gate, size_t(n)}, {up, size_t(n)}, {out, size_t(n)}, situ);
      return;
  }
  fail("glu_activate: activation {} is not supported by the CPU forward yet", int(act));
}

void GluMlp::validate(const char* what) const {
  check_weight(gate, what);
  check_weight(up, what);
  check_weight(down, what);
  DS_CHECK(up.rows == gate.rows && up.cols == gate.cols && down.rows == gate.cols && down.cols == gate.rows,
           "{}: inconsistent MLP shapes gate [{}, {}] up [{}, {}] down [{}, {}]", what, gate.rows, gate.cols,
           up.rows, up.cols, down.rows, down.cols);
}

void GluMlp::forward(const float* x, int64_t T, float* y, bool accumulate) const {
  if (T == 0) return;
  const int64_t I = intermediate();
  std::vector<float> g(size_t(T * I)), u(size_t(T * I));  // f32 [T, I]
  linear(x, T, gate, g.data());
  linear(x, T, up, u.data());
  glu_activate(act, g.data(), u.data(), T * I, g.data(), situ);
  if (accumulate)
    linear_accumulate(g.data(), T, down, y);
  else
    linear(g.data(), T, down, y);
}

}  // namespace ds
