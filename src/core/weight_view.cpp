#include "core/weight_view.h"

#include <cstring>

#include "core/check.h"
#include "core/element_read.h"

namespace ds {

float WeightView::at(int64_t r, int64_t c) const {
  return bf16_or_f32_at(data, dtype, r * cols + c);
}

WeightView WeightView::slice_rows(int64_t r0, int64_t n) const {
  DS_CHECK(r0 >= 0 && n >= 0 && r0 + n <= rows, "weight row slice [{}, {}) outside [0, {})", r0, r0 + n,
           rows);
  WeightView v = *this;
  v.data = static_cast<const uint8_t*>(data) + r0 * cols * int64_t(dtype_size(dtype));
  v.rows = n;
  return v;
}

WeightView WeightView::row_view(int64_t r) const {
  return slice_rows(r, 1);
}

void check_weight(const WeightView& w, const char* what) {
  DS_CHECK(w.data != nullptr, "weight {}: null data", what);
  DS_CHECK(w.dtype == DType::F32 || w.dtype == DType::BF16,
           "weight {}: dtype {} not supported by the linear kernels (F32 or BF16)", what,
           dtype_name(w.dtype));
  DS_CHECK(w.rows > 0 && w.cols > 0, "weight {}: bad shape [{}, {}]", what, w.rows, w.cols);
}

void weight_rows_to_f32(const WeightView& w, int64_t r0, int64_t n, float* out) {
  DS_CHECK(w.device == Device::Cpu, "weight_rows_to_f32: the weight is in {} memory", device_name(w.device));
  const int64_t count = n * w.cols;
  if (w.dtype == DType::F32) {
    const float* src = static_cast<const float*>(w.data) + r0 * w.cols;
    std::memcpy(out, src, size_t(count) * sizeof(float));
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(w.data) + r0 * w.cols;
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t u = uint32_t(src[i]) << 16;
    std::memcpy(&out[i], &u, 4);
  }
}

std::vector<float> to_f32(const WeightView& w) {
  check_weight(w, "to_f32");
  std::vector<float> out(size_t(w.numel()));
  weight_rows_to_f32(w, 0, w.rows, out.data());
  return out;
}

}  // namespace ds
