#include "model/mxfp4.h"

#include "core/check.h"
#include "model/weights.h"

namespace ds {

void mxfp4_decode_row(const LinearWeight& w, int64_t row, std::span<float> out) {
  DS_CHECK(w.is_mxfp4(), "mxfp4: tensor `{}` is not MXFP4", w.weight.name);
  DS_CHECK(row >= 0 && row < w.out, "mxfp4: row {} outside [0, {}) of `{}`", row, w.out, w.weight.name);
  DS_CHECK(w.weight.data && w.scale->data, "mxfp4: tensor `{}` has no data (opened header-only)",
           w.weight.name);
  const size_t n_packed = size_t(w.in / 2), n_scales = size_t(w.in / kMxfp4BlockSize);
  mxfp4_decode_row({w.weight.data + size_t(row) * n_packed, n_packed},
                   {w.scale->data + size_t(row) * n_scales, n_scales}, out);
}

}  // namespace ds
