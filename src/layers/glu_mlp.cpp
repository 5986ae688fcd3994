#include "layers/glu_mlp.h"

#include <vector>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/linear.h"

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

void GluMlp::forward_grouped(std::span<const GluMlp* const> mlps, std::span<const int64_t> offsets,
                             const float* x, float* y) {
  DS_CHECK(offsets.size() == mlps.size() + 1, "glu mlp: {} row offsets for {} MLPs", offsets.size(),
           mlps.size());
  bool dense = true;
  for (const GluMlp* m : mlps)
    dense = dense && !m->gate.is_mxfp4() && !m->up.is_mxfp4() && !m->down.is_mxfp4();
  if (!dense) {
    for (size_t i = 0; i < mlps.size(); ++i) {
      const int64_t r0 = offsets[i], n = offsets[i + 1] - r0, D = mlps[i]->width();
      mlps[i]->forward(x + r0 * D, n, y + r0 * D);
    }
    return;
  }
  std::vector<int64_t> at(mlps.size() + 1, 0);  // start of MLP i's rows in the [rows, I_i] buffers
  for (size_t i = 0; i < mlps.size(); ++i)
    at[i + 1] = at[i] + (offsets[i + 1] - offsets[i]) * mlps[i]->intermediate();
  std::vector<float> g(size_t(at.back())), u(size_t(at.back()));
  std::vector<LinearJob> jobs;
  for (size_t i = 0; i < mlps.size(); ++i) {
    const GluMlp& m = *mlps[i];
    const int64_t r0 = offsets[i], n = offsets[i + 1] - r0, D = m.width(), I = m.intermediate();
    if (n == 0) continue;
    jobs.push_back({f32_rows(x + r0 * D, n, D), m.gate.dense, f32_rows(g.data() + at[i], n, I)});
    jobs.push_back({f32_rows(x + r0 * D, n, D), m.up.dense, f32_rows(u.data() + at[i], n, I)});
  }
  linear_batch(jobs);
  jobs.clear();
  for (size_t i = 0; i < mlps.size(); ++i) {
    const GluMlp& m = *mlps[i];
    const int64_t r0 = offsets[i], n = offsets[i + 1] - r0, D = m.width(), I = m.intermediate();
    if (n == 0) continue;
    glu_activate(m, g.data() + at[i], u.data() + at[i], n * I, g.data() + at[i]);
    jobs.push_back({f32_rows(g.data() + at[i], n, I), m.down.dense, f32_rows(y + r0 * D, n, D)});
  }
  linear_batch(jobs);
}

}  // namespace ds
