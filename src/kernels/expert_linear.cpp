#include "kernels/expert_linear.h"

#include <vector>

#include "core/mxfp4.h"
#include "kernels/cpu/mxfp4_linear.h"
#include "kernels/dispatch.h"
#include "kernels/linear.h"
#include "kernels/memory.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {

void ExpertLinear::validate(const char* what) const {
  if (!is_mxfp4()) {
    check_weight(dense, what);
    return;
  }
  DS_CHECK(mxfp4.scale != nullptr, "weight {}: MXFP4 without weight_scale", what);
  DS_CHECK(mxfp4.rows > 0 && mxfp4.cols > 0 && mxfp4.cols % kMxfp4BlockSize == 0,
           "weight {}: MXFP4 shape [{}, {}] needs in % 32 == 0", what, mxfp4.rows, mxfp4.cols);
}

void expert_linear(const TensorView& x, const ExpertLinear& w, const TensorView& y, bool accumulate) {
  if (!w.is_mxfp4()) return linear(x, w.dense, y, accumulate);
  w.validate("expert_linear");
  const int64_t T = x.ndim == 2 ? x.shape[0] : -1;
  if (w.device() == Device::Cuda) {
    // CUDA: the packed matrix is dequantised into scratch of x's dtype (f32 or bf16), then the dense
    // product runs through cuBLASLt; the resident weight stays packed.
    detail::check_rows_f32_or_bf16("expert_linear", "x", x, T, w.cols());
    check_same_device("expert_linear", Device::Cuda, {&x, &y});
#ifdef DS_HAVE_CUDA
    const bool bf16 = x.dtype == DType::BF16;
    Buffer dense(Device::Cuda, w.rows() * w.cols() * (bf16 ? 2 : 4));
    cuda::launch_mxfp4_dequant(w.mxfp4.packed, w.mxfp4.scale, w.rows(), w.cols(), dense.data(), bf16);
    return linear(x, WeightView{dense.data(), x.dtype, w.rows(), w.cols(), Device::Cuda}, y, accumulate);
#endif
    detail::no_backend("expert_linear (MXFP4)", Device::Cuda);
  }
  detail::check_rows("expert_linear", "x", x, T, w.cols());
  detail::check_rows("expert_linear", "y", y, T, w.rows());
  check_same_device("expert_linear", w.device(), {&x, &y});
  if (w.device() != Device::Cpu) detail::no_backend("expert_linear (MXFP4)", w.device());
  cpu::mxfp4_linear(static_cast<const float*>(x.data), x.stride[0], T, w.mxfp4, static_cast<float*>(y.data),
                    y.stride[0], accumulate);
}

void mxfp4_dequant(const Mxfp4View& w, const TensorView& out) {
  const ExpertLinear e(w);
  e.validate("mxfp4_dequant");
  const bool bf16 = out.dtype == DType::BF16;
  DS_CHECK(bf16 || out.dtype == DType::F32, "mxfp4_dequant: out must be F32 or BF16, got {}",
           dtype_name(out.dtype));
  detail::check_flat("mxfp4_dequant", "out", out, w.rows * w.cols, out.dtype);
  check_same_device("mxfp4_dequant", w.device, {&out});
  if (w.device == Device::Cpu) {
    std::vector<float> row(size_t(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
      mxfp4_decode_row({w.packed + r * w.cols / 2, size_t(w.cols / 2)},
                       {w.scale + r * w.cols / kMxfp4BlockSize, size_t(w.cols / kMxfp4BlockSize)}, row);
      for (int64_t c = 0; c < w.cols; ++c) {
        if (bf16)
          static_cast<uint16_t*>(out.data)[r * w.cols + c] = f32_to_bf16(row[size_t(c)]);
        else
          static_cast<float*>(out.data)[r * w.cols + c] = row[size_t(c)];
      }
    }
    return;
  }
#ifdef DS_HAVE_CUDA
  return cuda::launch_mxfp4_dequant(w.packed, w.scale, w.rows, w.cols, out.data, bf16);
#endif
  detail::no_backend("mxfp4_dequant", w.device);
}

}  // namespace ds
