// CUDA dense kernels (kernels/linear.h through cuBLASLt, norm.h, activation.h on Device::Cuda)
// against the CPU references, f32 and bf16, awkward shapes, strided rows, accumulation. ctest label
// "gpu"; skipped with a message without a CUDA device. Tolerances: f32 products accumulate in f32 in
// a different order (≤ 1e-5 relative); bf16 outputs are rounded once (≤ 4e-3 relative L2).
#include <gtest/gtest.h>

#include <random>

#include "../kda_batch_case.h"
#include "kernels/activation.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/norm.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/linear.h"
#include "kernels/norm.h"

namespace ds {
namespace {

using cuda::DeviceBuffer;
using test::HostTensor;

class DenseCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

HostTensor random_tensor(DType dt, int64_t rows, int64_t cols, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  HostTensor t = HostTensor::make(dt, rows, cols);
  test::fill_randn(t, rng, stddev);
  return t;
}

TensorView dev_rows(const DeviceBuffer& b, DType dt, int64_t rows, int64_t cols, int64_t stride = -1) {
  return TensorView::matrix(b.data(), dt, rows, cols, stride, Device::Cuda);
}

std::vector<float> download(const DeviceBuffer& b, DType dt, int64_t rows, int64_t cols) {
  HostTensor h = HostTensor::make(dt, rows, cols);
  h.bytes = b.to_host<uint8_t>();
  return h.to_f32();
}

void expect_linear(DType in_dt, DType out_dt, int64_t T, int64_t in, int64_t out, bool strided,
                   bool accumulate) {
  const int64_t xs = strided ? in + 24 : in;
  const HostTensor x = random_tensor(in_dt, T, xs, 1), w = random_tensor(in_dt, out, in, 2, 0.05f);
  const HostTensor y0 = random_tensor(out_dt, T, out, 3);
  DeviceBuffer dx = DeviceBuffer::from(x.bytes), dw = DeviceBuffer::from(w.bytes),
               dy = DeviceBuffer::from(y0.bytes);
  const WeightView wv{dw.data(), in_dt, out, in, Device::Cuda};
  linear(dev_rows(dx, in_dt, T, in, xs), wv, dev_rows(dy, out_dt, T, out), accumulate);
  cuda::check(cudaDeviceSynchronize(), "linear test");
  const std::vector<float> got = download(dy, out_dt, T, out);
  // Reference: the same (rounded) values in f32 through the CPU oracle.
  const std::vector<float> xf = x.to_f32(), wf = w.to_f32();
  std::vector<float> want(size_t(T * out));
  std::vector<float> xpacked(size_t(T * in));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < in; ++c) xpacked[size_t(t * in + c)] = xf[size_t(t * xs + c)];
  cpu::linear_ref(xpacked.data(), T, WeightView{wf.data(), DType::F32, out, in}, want.data());
  if (accumulate) {
    const std::vector<float> y0f = y0.to_f32();
    for (size_t i = 0; i < want.size(); ++i) want[i] += y0f[i];
  }
  const double err = test::rel_l2(got.data(), want.data(), want.size());
  std::printf("[linear %s->%s T=%lld in=%lld out=%lld%s%s] rel L2 %.2e\n", dtype_name(in_dt).data(),
              dtype_name(out_dt).data(), (long long)T, (long long)in, (long long)out,
              strided ? " strided" : "", accumulate ? " accumulate" : "", err);
  EXPECT_LT(err, out_dt == DType::BF16 ? 4e-3 : 1e-5);
}

TEST_F(DenseCuda, LinearF32) {
  expect_linear(DType::F32, DType::F32, 1, 96, 40, false, false);
  expect_linear(DType::F32, DType::F32, 7, 2304, 128, true, false);
  expect_linear(DType::F32, DType::F32, 33, 128, 257, false, true);
}

TEST_F(DenseCuda, LinearBf16) {
  expect_linear(DType::BF16, DType::F32, 1, 2304, 4096, false, false);
  expect_linear(DType::BF16, DType::F32, 64, 1024, 2304, true, true);
  expect_linear(DType::BF16, DType::BF16, 300, 2304, 512, false, false);
}

TEST_F(DenseCuda, LinearRejectsMixedTypes) {
  DeviceBuffer dx(4 * 64 * 4), dw(64 * 64 * 2), dy(4 * 64 * 4);
  const WeightView wv{dw.data(), DType::BF16, 64, 64, Device::Cuda};
  EXPECT_THROW(linear(dev_rows(dx, DType::F32, 4, 64), wv, dev_rows(dy, DType::F32, 4, 64)), Error);
}

void expect_norms(DType dt, int64_t rows, int64_t dim) {
  const HostTensor x = random_tensor(dt, rows, dim, 4), g = random_tensor(dt, rows, dim, 5);
  std::vector<float> w(static_cast<size_t>(dim));
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(1.0f, 0.2f);
  for (float& v : w) v = nd(rng);
  DeviceBuffer dx = DeviceBuffer::from(x.bytes), dg = DeviceBuffer::from(g.bytes), dw = DeviceBuffer::from(w);
  DeviceBuffer dy(x.bytes.size());
  const TensorView wv = f32_vec(dw.as<float>(), dim, Device::Cuda);
  const std::vector<float> xf = x.to_f32(), gf = g.to_f32();
  std::vector<float> want(xf.size());
  const double tol = dt == DType::BF16 ? 4e-3 : 1e-5;

  rmsnorm(dev_rows(dx, dt, rows, dim), wv, 1e-5f, dev_rows(dy, dt, rows, dim));
  cpu::rmsnorm(xf.data(), rows, dim, w.data(), 1e-5f, want.data());
  std::vector<float> got = download(dy, dt, rows, dim);
  EXPECT_LT(test::rel_l2(got.data(), want.data(), want.size()), tol) << "rmsnorm";

  rmsnorm_gated_sigmoid(dev_rows(dx, dt, rows, dim), dev_rows(dg, dt, rows, dim), wv, 1e-5f,
                        dev_rows(dy, dt, rows, dim));
  cpu::rmsnorm_gated_sigmoid(xf.data(), gf.data(), rows, dim, w.data(), 1e-5f, want.data());
  got = download(dy, dt, rows, dim);
  EXPECT_LT(test::rel_l2(got.data(), want.data(), want.size()), tol) << "rmsnorm_gated_sigmoid";

  silu_mul(dev_rows(dx, dt, rows, dim), dev_rows(dg, dt, rows, dim), dev_rows(dy, dt, rows, dim));
  cpu::silu_mul(xf.data(), gf.data(), rows * dim, want.data());
  got = download(dy, dt, rows, dim);
  EXPECT_LT(test::rel_l2(got.data(), want.data(), want.size()), tol) << "silu_mul";

  sigmoid(dev_rows(dx, dt, rows, dim), dev_rows(dy, dt, rows, dim));
  cpu::sigmoid(xf.data(), rows * dim, want.data());
  got = download(dy, dt, rows, dim);
  EXPECT_LT(test::rel_l2(got.data(), want.data(), want.size()), tol) << "sigmoid";

  l2norm_rows(dev_rows(dx, dt, rows, dim), 1e-6f);
  want = xf;
  cpu::l2norm_rows(want.data(), rows, dim, 1e-6f);
  got = download(dx, dt, rows, dim);
  EXPECT_LT(test::rel_l2(got.data(), want.data(), want.size()), tol) << "l2norm_rows";
  std::printf("[norms %s rows=%lld dim=%lld] checked\n", dtype_name(dt).data(), (long long)rows,
              (long long)dim);
}

TEST_F(DenseCuda, NormsAndActivations) {
  expect_norms(DType::F32, 5, 2304);  // one CTA per row, row in registers
  expect_norms(DType::BF16, 64, 128);
  expect_norms(DType::F32, 1, 7);
  expect_norms(DType::F32, 37, 128);  // a warp per row (KDA's per-head o_norm)
  expect_norms(DType::F32, 9, 512);   // a warp per row, four vectors per lane
  expect_norms(DType::F32, 3, 4100);  // above the register row: the strided kernel
}

}  // namespace
}  // namespace ds
