// Internal to src/kernels/cpu/isa: elementwise kernels, norms, the short-conv row and bf16 widening
// for one ISA (see kernel_table.h for the contracts; drivers in the kernels' .cpp files).
#pragma once

namespace ds::cpu::DS_ISA {

// y[i] = f(x[i]) for any n, f a vector function.
template <typename F>
inline void map_array(const float* x, int64_t n, float* y, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, f(vload(x + i)));
  if (i < n) vstoren(y + i, f(vloadn(x + i, n - i)), n - i);
}

struct ExpOp {
  vf operator()(vf x) const { return vexp(x); }
};
struct SiluOp {
  vf operator()(vf x) const { return vsilu(x); }
};
struct SigmoidOp {
  vf operator()(vf x) const { return vsigmoid(x); }
};

inline void exp_array(const float* x, int64_t n, float* y) {
  map_array(x, n, y, ExpOp{});
}
inline void silu_array(const float* x, int64_t n, float* y) {
  map_array(x, n, y, SiluOp{});
}
inline void sigmoid_array(const float* x, int64_t n, float* y) {
  map_array(x, n, y, SigmoidOp{});
}

inline void silu_mul(const float* gate, const float* up, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(y + i, vmul(vsilu(vload(gate + i)), vload(up + i)));
  if (i < n) vstoren(y + i, vmul(vsilu(vloadn(gate + i, n - i)), vloadn(up + i, n - i)), n - i);
}

// y = x · s (· w if w), one row of n floats.
inline void scale_row(const float* x, float s, const float* w, int64_t n, float* y) {
  const vf sv = vset1(s);
  int64_t i = 0;
  if (w) {
    for (; i + kLanes <= n; i += kLanes) vstore(y + i, vmul(vmul(vload(x + i), sv), vload(w + i)));
    if (i < n) vstoren(y + i, vmul(vmul(vloadn(x + i, n - i), sv), vloadn(w + i, n - i)), n - i);
  } else {
    for (; i + kLanes <= n; i += kLanes) vstore(y + i, vmul(vload(x + i), sv));
    if (i < n) vstoren(y + i, vmul(vloadn(x + i, n - i), sv), n - i);
  }
}

inline void rmsnorm_rows(const float* x, int64_t rows, int64_t dim, const float* w, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float s = 1.0f / std::sqrt(dot(xr, xr, dim) / float(dim) + eps);
    scale_row(xr, s, w, dim, y + r * dim);
  }
}

inline void rmsnorm_gated_sigmoid_rows(const float* x, const float* gate, int64_t rows, int64_t dim,
                                       const float* w, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim, *gr = gate + r * dim;
    float* yr = y + r * dim;
    const vf s = vset1(1.0f / std::sqrt(dot(xr, xr, dim) / float(dim) + eps));
    for (int64_t i = 0; i < dim; i += kLanes) {
      const int64_t m = dim - i;
      const vf v = vmul(vloadn(xr + i, m), s);
      const vf gw = vmul(vloadn(w + i, m), vsigmoid(vloadn(gr + i, m)));
      vstoren(yr + i, vmul(v, gw), m);
    }
  }
}

inline void l2norm_rows(float* x, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * dim;
    scale_row(xr, 1.0f / std::sqrt(dot(xr, xr, dim) + eps), nullptr, dim, xr);
  }
}

// y[c] = silu(Σ_j tapsT[j, c] · rows[j][c]) for c < C (rows[j]: input row at t − W + 1 + j).
inline void conv_silu_row(const float* const* rows, const float* tapsT, int64_t C, int64_t W, float* y) {
  for (int64_t c = 0; c < C; c += kLanes) {
    const int64_t m = C - c;
    vf acc = vzero();
    for (int64_t j = 0; j < W; ++j) acc = vfma(vloadn(tapsT + j * C + c, m), vloadn(rows[j] + c, m), acc);
    vstoren(y + c, vsilu(acc), m);
  }
}

inline void bf16_to_f32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vstore(dst + i, vload_bf16(src + i));
  if (i < n) vstoren(dst + i, vload_bf16n(src + i, n - i), n - i);
}

}  // namespace ds::cpu::DS_ISA
