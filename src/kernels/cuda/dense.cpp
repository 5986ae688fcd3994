#include "kernels/cuda/dense.h"

#include <cublasLt.h>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dense_launch.h"

namespace ds::cuda {
namespace {

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail("linear (CUDA): {}: cuBLASLt status {}", what, int(s));
}

// One cuBLASLt handle and a 32 MiB workspace per process (created on first use, device 0 or the
// current device at that time).
struct LtContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = size_t(32) << 20;
  LtContext() {
    check_lt(cublasLtCreate(&handle), "create handle");
    check(cudaMalloc(&workspace, workspace_bytes), "linear workspace");
  }
};

LtContext& lt() {
  static LtContext ctx;
  return ctx;
}

cudaDataType_t cuda_type(DType t) {
  return t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Column-major view of a row-major [rows, cols] matrix with row stride ld: [cols, rows], leading dim ld.
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  Layout(DType t, uint64_t rows_cm, uint64_t cols_cm, int64_t ld) {
    check_lt(cublasLtMatrixLayoutCreate(&l, cuda_type(t), rows_cm, cols_cm, ld), "matrix layout");
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(l); }
};

RowsArg rows_arg(const TensorView& x, const TensorView& y) {
  RowsArg a;
  a.x = x.data, a.x_stride = x.stride[0], a.y = y.data, a.y_stride = y.stride[0];
  a.bf16 = x.dtype == DType::BF16;
  a.rows = x.shape[0], a.dim = x.ndim == 2 ? x.shape[1] : 1;
  return a;
}

// Largest power of two <= 256 that divides the address.
uint32_t alignment(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// A flat view as rows [1, n] for the elementwise kernels.
TensorView as_rows(const TensorView& v) {
  if (v.ndim == 2) return v;
  return TensorView::matrix(v.data, v.dtype, 1, v.numel(), -1, v.device);
}

// heads == 1: one product; otherwise strided-batched (operand h advanced by h times its stride).
void matmul(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate, int64_t heads,
            int64_t x_stride, int64_t w_stride, int64_t y_stride, int64_t w_ld) {
  const int64_t T = x.shape[0];
  if (T == 0) return;
  DS_CHECK(!accumulate || y.dtype == DType::F32 || y.dtype == DType::BF16, "linear (CUDA): bad output dtype");
  LtContext& c = lt();
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // f32 accumulation, no TF32
  cublasLtMatmulDesc_t desc = nullptr;
  check_lt(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "matmul desc");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  check_lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  // y^T [out, T] = W [out, in] · x^T [in, T] in column-major terms: A = W (col-major [in, out], op T),
  // B = x (col-major [in, T]), C = D = y (col-major [out, T]).
  const Layout A(w.dtype, uint64_t(w.cols), uint64_t(w.rows), w_ld);
  const Layout B(x.dtype, uint64_t(w.cols), uint64_t(T), x.stride[0]);
  const Layout C(y.dtype, uint64_t(w.rows), uint64_t(T), y.stride[0]);
  if (heads > 1) {
    const int32_t n = int32_t(heads);
    const Layout* layouts[3] = {&A, &B, &C};
    const int64_t strides[3] = {w_stride, x_stride, y_stride};
    for (int i = 0; i < 3; ++i) {
      check_lt(
          cublasLtMatrixLayoutSetAttribute(layouts[i]->l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof(n)),
          "batch count");
      check_lt(cublasLtMatrixLayoutSetAttribute(layouts[i]->l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &strides[i], sizeof(strides[i])),
               "batch stride");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &c.workspace_bytes, sizeof(c.workspace_bytes)),
           "workspace preference");
  // cuBLASLt assumes 256-byte aligned operands unless told otherwise; column slices of wider
  // matrices (per-head views) are less aligned, so state each operand's actual alignment.
  // Batched heads: every head's operand must keep the alignment stated for head 0.
  const auto head_align = [&](const void* p, int64_t stride, DType dt) {
    uint32_t a = alignment(p);
    if (heads > 1)
      while (a > 1 && (uint64_t(stride) * dtype_size(dt)) % a != 0) a /= 2;
    return a;
  };
  const uint32_t ay = head_align(y.data, y_stride, y.dtype);
  const uint32_t align[4] = {head_align(w.data, w_stride, w.dtype), head_align(x.data, x_stride, x.dtype), ay,
                             ay};
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof(align[i])),
             "alignment preference");
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(c.handle, desc, A.l, B.l, C.l, C.l, pref, 1, &heur, &found),
           "heuristic");
  DS_CHECK(found > 0, "linear (CUDA): no cuBLASLt algorithm for [{}, {}] x {} rows ({} weight, {} out)",
           w.rows, w.cols, T, dtype_name(w.dtype), dtype_name(y.dtype));
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  check_lt(cublasLtMatmul(c.handle, desc, &alpha, w.data, A.l, x.data, B.l, &beta, y.data, C.l, y.data, C.l,
                          &heur.algo, c.workspace, c.workspace_bytes, cudaStreamPerThread),
           "matmul");
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
}

}  // namespace

void linear(const TensorView& x, const WeightView& w, const TensorView& y, bool accumulate) {
  matmul(x, w, y, accumulate, 1, 0, 0, 0, w.cols);
}

void linear_heads(const TensorView& x, const WeightView& w, const TensorView& y, int64_t heads,
                  int64_t x_stride, int64_t w_stride, int64_t y_stride, bool accumulate) {
  matmul(x, w, y, accumulate, heads, x_stride, w_stride, y_stride, w.cols);
}

void linear_heads_ld(const TensorView& x, const WeightView& w, int64_t w_ld, const TensorView& y,
                     int64_t heads, int64_t x_stride, int64_t w_stride, int64_t y_stride) {
  DS_CHECK(w_ld >= w.cols, "linear (CUDA): weight row stride {} below its {} columns", w_ld, w.cols);
  matmul(x, w, y, false, heads, x_stride, w_stride, y_stride, w_ld);
}

void rmsnorm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y) {
  RowsArg a = rows_arg(x, y);
  a.weight = static_cast<const float*>(weight.data), a.eps = eps;
  launch_rows(RowOp::RmsNorm, a);
}

void rmsnorm_gated_sigmoid(const TensorView& x, const TensorView& gate, const TensorView& weight, float eps,
                           const TensorView& y) {
  RowsArg a = rows_arg(x, y);
  a.gate = gate.data, a.gate_stride = gate.stride[0];
  a.weight = static_cast<const float*>(weight.data), a.eps = eps;
  launch_rows(RowOp::RmsNormGatedSigmoid, a);
}

void l2norm_rows(const TensorView& x, float eps) {
  RowsArg a = rows_arg(x, x);
  a.eps = eps;
  launch_rows(RowOp::L2Norm, a);
}

void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) {
  RowsArg a = rows_arg(as_rows(gate), as_rows(y));
  const TensorView u = as_rows(up);
  a.gate = u.data, a.gate_stride = u.stride[0];
  launch_rows(RowOp::SiluMul, a);
}

void sigmoid(const TensorView& x, const TensorView& y) {
  launch_rows(RowOp::Sigmoid, rows_arg(as_rows(x), as_rows(y)));
}

void silu(const TensorView& x, const TensorView& y) {
  launch_rows(RowOp::Silu, rows_arg(as_rows(x), as_rows(y)));
}

}  // namespace ds::cuda
