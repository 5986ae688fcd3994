#include "kernels/cpu/rows.h"

#include <cmath>
#include <cstring>

#include "kernels/activation.h"

namespace ds::cpu {
namespace {

float* row(const TensorView& v, int64_t r) {
  return static_cast<float*>(v.data) + r * v.stride[0];
}

float sigmoid1(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

// Element (r, c) of an F32 or BF16 row view as f32.
float load(const TensorView& v, int64_t r, int64_t c) {
  if (v.dtype == DType::F32) return static_cast<const float*>(v.data)[r * v.stride[0] + c];
  return bf16_to_f32(static_cast<const uint16_t*>(v.data)[r * v.stride[0] + c]);
}

}  // namespace

void cast_rows(const TensorView& x, const TensorView& y) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float v = load(x, r, c);
      if (y.dtype == DType::F32)
        static_cast<float*>(y.data)[r * y.stride[0] + c] = v;
      else
        static_cast<uint16_t*>(y.data)[r * y.stride[0] + c] = f32_to_bf16(v);
    }
}

void add_rows(const TensorView& x, const TensorView& y) {
  for (int64_t r = 0; r < x.shape[0]; ++r) {
    const float* a = row(x, r);
    float* b = row(y, r);
    for (int64_t c = 0; c < x.shape[1]; ++c) b[c] += a[c];
  }
}

void mul_sigmoid_rows(const TensorView& g, const TensorView& y) {
  for (int64_t r = 0; r < g.shape[0]; ++r) {
    const float* a = row(g, r);
    float* b = row(y, r);
    for (int64_t c = 0; c < g.shape[1]; ++c) b[c] *= sigmoid1(a[c]);
  }
}

void situ_mul_rows(const TensorView& gate, const TensorView& up, const TensorView& y, float beta,
                   float linear_beta) {
  for (int64_t r = 0; r < gate.shape[0]; ++r) {
    const float* a = row(gate, r);
    const float* b = row(up, r);
    float* o = row(y, r);
    for (int64_t c = 0; c < gate.shape[1]; ++c) o[c] = situf(a[c], b[c], beta, linear_beta);
  }
}

void embedding_rows(const WeightView& table, const TensorView& ids, const TensorView& out) {
  const int32_t* id = static_cast<const int32_t*>(ids.data);
  for (int64_t t = 0; t < out.shape[0]; ++t) weight_rows_to_f32(table, id[t], 1, row(out, t));
}

void gather_rows(const TensorView& src, const TensorView& idx, const TensorView& dst) {
  const int32_t* ix = static_cast<const int32_t*>(idx.data);
  for (int64_t i = 0; i < dst.shape[0]; ++i)
    std::memcpy(row(dst, i), row(src, ix[i]), size_t(dst.shape[1]) * sizeof(float));
}

void weighted_combine_rows(const TensorView& rows, const TensorView& pos, const TensorView& weight,
                           const TensorView& out) {
  const int64_t T = out.shape[0], C = out.shape[1], k = pos.shape[1];
  const int32_t* p = static_cast<const int32_t*>(pos.data);
  const float* w = static_cast<const float*>(weight.data);
  for (int64_t t = 0; t < T; ++t) {
    float* o = row(out, t);
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j) acc += w[t * k + j] * row(rows, p[t * k + j])[c];
      o[c] = acc;
    }
  }
}

}  // namespace ds::cpu
