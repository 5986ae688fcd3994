// The grouped expert GEMM of a prefill (kernels/moe_gemm.h) on Hopper's warpgroup MMA: the same tile
// list and the same products as moe_gemm.cu's mma.sync kernel (bf16 experts, K % 64 == 0). A CTA
// computes one 128-row tile of an expert's grouped rows against 256 weight rows (glu: 128 gate + the
// same 128 up rows, so the GLU is formed in registers; down: 256 output columns). Two warpgroups of 64
// rows each issue wgmma m64n256k16 with both operands in shared memory (128-byte swizzle, by
// descriptor); the A rows (the token permutation read in place) and the weight rows arrive by
// cp.async in k steps of 64 through 4 stages, two steps ahead, and one step's products stay in flight
// while the next step is issued. A warpgroup whose 64 rows all lie past its expert's last row skips its
// products (a partial tile costs half), and rows past the group or columns past N are not loaded:
// their stale values reach only outputs that are not stored.
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/expert_act.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/moe_gemm_launch.h"
#include "kernels/cuda/moe_gemm_tile.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace ds::cuda {
namespace {

constexpr int kBM = int(kMoeGemmTileRows), kBN = 256, kBK = 64, kStages = 4, kThreads = 256;
constexpr int kABytes = kBM * kBK * 2, kBBytes = kBN * kBK * 2, kStageBytes = kABytes + kBBytes;
constexpr size_t kSmemBytes = size_t(kStages) * kStageBytes + 1024;  // + alignment of the first tile
static_assert(kBM == 2 * 64, "two warpgroups of 64 rows");

__device__ __forceinline__ float silu(float x) {
  return x / (1.0f + __expf(-x));
}

template <bool kGlu>
__global__ void __launch_bounds__(kThreads, 1) moe_gemm_wgmma_kernel(const MoeGemmLaunch l) {
  MoeGemmTile tl;
  if (!moe_gemm_tile(l, kGlu ? kBN / 2 : kBN, tl)) return;
  const int e = tl.e, m0 = tl.m0, m_end = tl.m_end, n0 = tl.n0;
  const int N = int(l.N), K = int(l.K), E = int(l.E);
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;  // stage s: A at base + s·kStageBytes, then B
  uint8_t* const base_ptr = smem_raw + (base - smem_addr(smem_raw));
  const int tid = threadIdx.x, wg = tid >> 7;

  // Copy chunks of this thread: 16-byte chunk j = tid % 8 of rows tid / 8 + 32 i (A: i < 4, B: i < 8);
  // every such row has the same row % 8, so one swizzled chunk offset serves all of them.
  const int j = tid & 7, r0 = tid >> 3;
  const uint32_t dst0 = uint32_t(r0 * 128 + ((j ^ (r0 & 7)) << 4));
  const uint16_t* a_src[4];
  bool a_ok[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gr = m0 + r0 + 32 * i;
    a_ok[i] = gr < m_end;
    a_src[i] = l.a + (a_ok[i] ? int64_t(l.a_rows ? l.a_rows[gr] : gr) : 0) * l.lda + j * 8;
  }
  const auto* gate = static_cast<const uint16_t*>(l.ptrs[l.b_first * E + e]);
  const auto* up = kGlu ? static_cast<const uint16_t*>(l.ptrs[(l.b_first + 1) * E + e]) : gate;
  const uint16_t* b_src[8];
  bool b_ok[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = r0 + 32 * i;  // B tile row; glu: rows 0..127 gate, 128..255 up of the same columns
    const int wrow = kGlu ? n0 + (r & (kBN / 2 - 1)) : n0 + r;
    b_ok[i] = wrow < N;
    b_src[i] = (kGlu && r >= kBN / 2 ? up : gate) + int64_t(b_ok[i] ? wrow : 0) * K + j * 8;
  }
  auto load_stage = [&](int stage, int kt) {
    uint8_t* s = base_ptr + stage * kStageBytes + dst0;
    const int k0 = kt * kBK;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (a_ok[i]) cp_async16(s + i * 32 * 128, a_src[i] + k0, true);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (b_ok[i]) cp_async16(s + kABytes + i * 32 * 128, b_src[i] + k0, true);
  };

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  // This warpgroup has rows of the expert; broadcast from lane 0 so that the compiler sees a
  // warp-uniform branch around the wgmma (else it serialises them).
  const bool active = __shfl_sync(0xffffffffu, int(m0 + 64 * wg < m_end), 0) != 0;
  const int KT = K / kBK;
#pragma unroll
  for (int s = 0; s < kStages - 2; ++s) {
    if (s < KT) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<kStages - 3>();  // this thread's copies of step kt have landed
    fence_proxy_async_shared();
    __syncthreads();  // ... every thread's; and both warpgroups finished the products of step kt - 2
    if (kt + kStages - 2 < KT) load_stage((kt + kStages - 2) % kStages, kt + kStages - 2);
    cp_async_commit();
    if (active) {
      const uint32_t sa = base + (kt % kStages) * kStageBytes;
      const uint64_t a_desc = wgmma_desc_sw128(sa + wg * 64 * 128), b_desc = wgmma_desc_sw128(sa + kABytes);
#pragma unroll
      for (int i = 0; i < 128; ++i) wgmma_fence_operand(acc[i]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)  // the k16 slice kk starts 32 bytes further along the rows
        wgmma_m64n256k16_bf16(acc, a_desc + uint64_t(2 * kk), b_desc + uint64_t(2 * kk), true);
      wgmma_commit();
      wgmma_wait<1>();
#pragma unroll
      for (int i = 0; i < 128; ++i) wgmma_fence_operand(acc[i]);
    }
  }
  wgmma_wait<0>();  // (nothing in flight for an inactive warpgroup)
#pragma unroll
  for (int i = 0; i < 128; ++i) wgmma_fence_operand(acc[i]);
  cp_async_wait<0>();
  if (!active) return;

  const int lane = tid & 31, w = (tid >> 5) & 3, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = m0 + 64 * wg + 16 * w + g + 8 * half;
    if (row >= m_end) continue;
    if (kGlu) {
      auto* out = static_cast<__nv_bfloat16*>(l.out) + int64_t(row) * l.ldo;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int col = n0 + 8 * i + 2 * t;
        if (col >= N) continue;
        const float* gv = acc + 4 * i + 2 * half;
        const float* uv = acc + 4 * (i + 16) + 2 * half;
        const float h0 = l.situ ? situ_glu(gv[0], uv[0], l.beta, l.linear_beta) : silu(gv[0]) * uv[0];
        const float h1 = l.situ ? situ_glu(gv[1], uv[1], l.beta, l.linear_beta) : silu(gv[1]) * uv[1];
        *reinterpret_cast<__nv_bfloat162*>(out + col) = __floats2bfloat162_rn(h0, h1);
      }
    } else {
      float* out = static_cast<float*>(l.out) + int64_t(row) * l.ldo;
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int col = n0 + 8 * i + 2 * t;
        if (col >= N) continue;
        *reinterpret_cast<float2*>(out + col) = make_float2(acc[4 * i + 2 * half], acc[4 * i + 2 * half + 1]);
      }
    }
  }
}

}  // namespace

bool moe_gemm_wgmma_fits(const MoeGemmLaunch& l) {
  return l.scales == nullptr && l.K % kBK == 0 && l.K > 0;
}

void launch_moe_gemm_wgmma(const MoeGemmLaunch& l, int64_t max_tiles) {
  require(moe_gemm_wgmma_fits(l), "moe_gemm (CUDA, wgmma): bf16 experts with K a multiple of 64");
  const int64_t bn = l.glu ? kBN / 2 : kBN;
  const dim3 grid(unsigned((l.N + bn - 1) / bn), unsigned(max_tiles));
  const auto kernel = l.glu ? moe_gemm_wgmma_kernel<true> : moe_gemm_wgmma_kernel<false>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes)),
        "moe gemm wgmma smem attribute");
  kernel<<<grid, kThreads, kSmemBytes>>>(l);
  check_launch("moe gemm wgmma kernel");
}

}  // namespace ds::cuda
