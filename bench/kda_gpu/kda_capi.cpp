// C ABI over kernels/kda.h for the GPU benchmark (bench_kda.py, ctypes): every pointer is device
// memory except the host metadata arrays; returns 0, or -1 with the error in ds_kda_last_error().
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/kda.h"

namespace {
thread_local std::string g_error;

template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  }
}

ds::TensorView rows(const void* p, bool bf16, int64_t n, int64_t cols) {
  return ds::TensorView::matrix(const_cast<void*>(p), bf16 ? ds::DType::BF16 : ds::DType::F32, n, cols, -1,
                                ds::Device::Cuda);
}
}  // namespace

extern "C" {

const char* ds_kda_last_error() {
  return g_error.c_str();
}

// Activations [T, H*128] (b: [T, H]) bf16 (bf16 != 0) or f32; lower_bound used when safe != 0.
int ds_kda_prefill(int bf16, int N, int H, const int64_t* cu_seqlens, const void* q, const void* k,
                   const void* v, const void* f, const void* b, void* o, const float* a_log,
                   const float* dt_bias, int safe, float lower_bound, float scale, float* pool,
                   int64_t slot_stride, int64_t n_slots, const int32_t* initial_slot,
                   const int32_t* final_slot, int n_ck, const int32_t* ck_seq, const int32_t* ck_slot,
                   const int64_t* ck_after, void* stream) {
  return guarded([&] {
    constexpr int64_t D = 128;
    const int64_t T = cu_seqlens[N];
    ds::KdaPrefillArgs a;
    a.H = H, a.K = D, a.V = D;
    a.cu_seqlens = {cu_seqlens, size_t(N) + 1};
    a.q = rows(q, bf16, T, H * D), a.k = rows(k, bf16, T, H * D), a.v = rows(v, bf16, T, H * D);
    a.f = rows(f, bf16, T, H * D), a.b = rows(b, bf16, T, H), a.o = rows(o, bf16, T, H * D);
    a.gate =
        ds::KdaGate{safe ? std::optional<float>(lower_bound) : std::nullopt,
                    ds::f32_vec(a_log, H, ds::Device::Cuda), ds::f32_vec(dt_bias, H * D, ds::Device::Cuda)};
    a.scale = scale;
    a.pool = ds::KdaStatePool{pool, slot_stride, n_slots, ds::Device::Cuda};
    a.initial_slot = {initial_slot, size_t(N)}, a.final_slot = {final_slot, size_t(N)};
    std::vector<ds::KdaCheckpointRequest> ck;
    for (int i = 0; i < n_ck; ++i) ck.push_back({ck_seq[i], ck_slot[i], ck_after[i]});
    a.checkpoints = ck;
    a.stream = stream;
    ds::kda_prefill(a);
  });
}

// One token for each of B sequences; slots: device i32 [B]; taps f32 [3, H*128, W]; conv pool f32;
// overlap_prior != 0: KdaDecodeArgs::overlap_prior_kernel.
int ds_kda_decode(int bf16, int B, int H, int W, const void* q, const void* k, const void* v, const void* f,
                  const void* b, const void* r, void* y, const float* taps, const float* o_norm,
                  const float* a_log, const float* dt_bias, int safe, float lower_bound, float scale,
                  float eps, float* pool, int64_t slot_stride, int64_t n_slots, float* conv,
                  int64_t conv_stride, const int32_t* slots, void* stream, int overlap_prior) {
  return guarded([&] {
    constexpr int64_t D = 128;
    ds::KdaDecodeArgs a;
    a.B = B, a.H = H, a.K = D, a.V = D, a.W = W;
    a.q_pre = rows(q, bf16, B, H * D), a.k_pre = rows(k, bf16, B, H * D), a.v_pre = rows(v, bf16, B, H * D);
    a.f = rows(f, bf16, B, H * D), a.b = rows(b, bf16, B, H), a.r = rows(r, bf16, B, H * D);
    a.y = rows(y, bf16, B, H * D);
    a.conv_taps = ds::f32_vec(taps, 3 * H * D * W, ds::Device::Cuda);
    a.o_norm = ds::f32_vec(o_norm, D, ds::Device::Cuda);
    a.gate =
        ds::KdaGate{safe ? std::optional<float>(lower_bound) : std::nullopt,
                    ds::f32_vec(a_log, H, ds::Device::Cuda), ds::f32_vec(dt_bias, H * D, ds::Device::Cuda)};
    a.scale = scale, a.norm_eps = eps;
    a.pool = ds::KdaStatePool{pool, slot_stride, n_slots, ds::Device::Cuda};
    a.conv_data = conv, a.conv_slot_stride = conv_stride;
    a.slots = ds::TensorView::contiguous(const_cast<int32_t*>(slots), ds::DType::I32, {B}, ds::Device::Cuda);
    a.stream = stream;
    a.overlap_prior_kernel = overlap_prior != 0;
    ds::kda_decode(a);
  });
}

}  // extern "C"
