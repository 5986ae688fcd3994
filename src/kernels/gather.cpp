#include "kernels/gather.h"

#include "kernels/cpu/rows.h"
#include "kernels/dispatch.h"
#ifdef DS_HAVE_CUDA
#include "kernels/cuda/model_ops_launch.h"
#endif

namespace ds {
namespace {

// On the CPU, every index in [0, n).
void check_indices(const char* op, const TensorView& idx, int64_t n) {
  if (idx.device != Device::Cpu) return;
  const int32_t* p = static_cast<const int32_t*>(idx.data);
  for (int64_t i = 0; i < idx.numel(); ++i)
    DS_CHECK(p[i] >= 0 && p[i] < n, "{}: index {} = {} not in [0, {})", op, i, p[i], n);
}

}  // namespace

void embedding_rows(const WeightView& table, const TensorView& ids, const TensorView& out) {
  check_weight(table, "embedding_rows");
  const int64_t T = out.ndim == 2 ? out.shape[0] : -1;
  detail::check_rows("embedding_rows", "out", out, T, table.cols);
  detail::check_flat("embedding_rows", "ids", ids, T, DType::I32);
  check_same_device("embedding_rows", table.device, {&ids, &out});
  check_indices("embedding_rows", ids, table.rows);
  if (table.device == Device::Cpu) return cpu::embedding_rows(table, ids, out);
#ifdef DS_HAVE_CUDA
  return cuda::launch_embedding(table.data, table.dtype == DType::BF16, table.cols,
                                static_cast<const int32_t*>(ids.data), T, static_cast<float*>(out.data),
                                out.stride[0]);
#endif
  detail::no_backend("embedding_rows", table.device);
}

void gather_rows(const TensorView& src, const TensorView& idx, const TensorView& dst) {
  const int64_t n = dst.ndim == 2 ? dst.shape[0] : -1, C = dst.ndim == 2 ? dst.shape[1] : -1;
  detail::check_rows("gather_rows", "src", src, src.ndim == 2 ? src.shape[0] : -1, C);
  detail::check_rows("gather_rows", "dst", dst, n, C);
  detail::check_flat("gather_rows", "idx", idx, n, DType::I32);
  check_same_device("gather_rows", src.device, {&idx, &dst});
  check_indices("gather_rows", idx, src.shape[0]);
  if (src.device == Device::Cpu) return cpu::gather_rows(src, idx, dst);
#ifdef DS_HAVE_CUDA
  return cuda::launch_gather_rows(static_cast<const float*>(src.data), src.stride[0],
                                  static_cast<const int32_t*>(idx.data), n, C, static_cast<float*>(dst.data),
                                  dst.stride[0]);
#endif
  detail::no_backend("gather_rows", src.device);
}

void weighted_combine_rows(const TensorView& rows, const TensorView& pos, const TensorView& weight,
                           const TensorView& out) {
  const int64_t T = out.ndim == 2 ? out.shape[0] : -1, C = out.ndim == 2 ? out.shape[1] : -1;
  const int64_t k = pos.ndim == 2 ? pos.shape[1] : -1;
  detail::check_rows("weighted_combine_rows", "rows", rows, rows.ndim == 2 ? rows.shape[0] : -1, C);
  detail::check_rows("weighted_combine_rows", "out", out, T, C);
  DS_CHECK(pos.ndim == 2 && pos.shape[0] == T && k >= 1, "weighted_combine_rows: pos must be [{}, k]", T);
  detail::check_flat("weighted_combine_rows", "pos", pos, T * k, DType::I32);
  detail::check_flat("weighted_combine_rows", "weight", weight, T * k);
  check_same_device("weighted_combine_rows", rows.device, {&pos, &weight, &out});
  check_indices("weighted_combine_rows", pos, rows.shape[0]);
  if (rows.device == Device::Cpu) return cpu::weighted_combine_rows(rows, pos, weight, out);
#ifdef DS_HAVE_CUDA
  return cuda::launch_weighted_combine(
      static_cast<const float*>(rows.data), rows.stride[0], static_cast<const int32_t*>(pos.data),
      static_cast<const float*>(weight.data), T, k, C, static_cast<float*>(out.data), out.stride[0]);
#endif
  detail::no_backend("weighted_combine_rows", rows.device);
}

}  // namespace ds
