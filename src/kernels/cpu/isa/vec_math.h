// Internal to src/kernels/cpu/isa: exp, sigmoid, SiLU and small reductions on top of one ISA's
// vector layer (vec_avx512.h / vec_avx2.h / vec_scalar.h, included first with DS_ISA defined).
#pragma once

namespace ds::cpu::DS_ISA {

// exp(x) per lane, about 1 ulp on [−104, 88.7] (inputs are clamped to it; NaN gives exp(−104)):
// x = n ln2 + r with |r| <= ln2/2 (Cody–Waite split of ln2), e^r by its degree-7 Taylor
// polynomial, then scaled by 2^n (results below the normal range become denormals, then 0).
inline vf vexp(vf x) {
  x = vmin(vmax(x, vset1(-104.0f)), vset1(88.7f));
  const vf n = vround(vmul(x, vset1(1.44269504088896341f)));
  vf r = vfnma(n, vset1(0.693145751953125f), x);        // ln2 high part: n · it is exact
  r = vfnma(n, vset1(1.42860682030941723212e-06f), r);  // ln2 low part
  vf p = vset1(1.0f / 5040.0f);
  p = vfma(p, r, vset1(1.0f / 720.0f));
  p = vfma(p, r, vset1(1.0f / 120.0f));
  p = vfma(p, r, vset1(1.0f / 24.0f));
  p = vfma(p, r, vset1(1.0f / 6.0f));
  p = vfma(p, r, vset1(0.5f));
  p = vfma(p, r, vset1(1.0f));
  p = vfma(p, r, vset1(1.0f));
  return vscale2(p, n);
}

inline vf vsigmoid(vf x) {  // 1 / (1 + exp(−x))
  const vf one = vset1(1.0f);
  return vdiv(one, vadd(one, vexp(vsub(vzero(), x))));
}
inline vf vsilu(vf x) {  // x · sigmoid(x)
  return vmul(x, vsigmoid(x));
}

// Σ a[i]·b[i] over n floats (two vector accumulators, then one horizontal sum).
inline float dot(const float* a, const float* b, int64_t n) {
  vf s0 = vzero(), s1 = vzero();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    s0 = vfma(vload(a + i), vload(b + i), s0);
    s1 = vfma(vload(a + i + kLanes), vload(b + i + kLanes), s1);
  }
  for (; i < n; i += kLanes) s0 = vfma(vloadn(a + i, n - i), vloadn(b + i, n - i), s0);
  return vsum(vadd(s0, s1));
}

// y[i] += a · x[i] over n floats.
inline void axpy(float a, const float* x, float* y, int64_t n) {
  const vf av = vset1(a);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vfma(av, vload(x + i), vload(y + i)));
  if (i < n) vstoren(y + i, vfma(av, vloadn(x + i, n - i), vloadn(y + i, n - i)), n - i);
}

}  // namespace ds::cpu::DS_ISA
