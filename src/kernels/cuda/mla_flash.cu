// Flash-style MLA prefill in the expanded form (kernels/mla_prefill.h mla_attention_expanded): per
// (block of kBM query rows, head) one CTA walks the key blocks its rows can see. Scores: for head
// widths dn + dr that are multiples of 64 (Kimi, K3: 192) each warpgroup of 64 rows issues wgmma
// m64n64k16 with [q_nope ; q_pe] and the key block [k_nope ; k_pe] both in 128-byte-swizzled shared
// memory (the queries converted to bf16 once per CTA); otherwise each warp keeps its 16 rows' queries
// as bf16 A fragments and uses mma.sync against the key block through ldmatrix. Then per warp: the
// running row max and sum (base-2 exponents), the probabilities as A fragments in registers (the C
// fragments of two neighbouring n8 tiles are one A fragment: the wgmma accumulators of a warp's 16
// rows have the same layout) and P · V by mma.sync with V through ldmatrix.trans; nothing of the scores
// reaches memory. Query blocks are issued longest first (causal: later rows see more keys).
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mla_flash_launch.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace ds::cuda {
namespace {

constexpr int kBM = 128, kBN = 64, kWarps = kBM / 16, kThreads = 32 * kWarps;

template <int DN, int DR, int DV>
struct FlashShape {
  static constexpr int DK = DN + DR;
  static constexpr bool kWg = DK % 64 == 0;  // scores on wgmma
  // mma.sync scores: shared rows padded by 16 bytes (the 8 rows of an ldmatrix land in distinct
  // banks). wgmma scores: keys in DK / 64 swizzled atoms of kBN rows × 128 bytes.
  static constexpr int kLdk = DK + 8, kLdv = DV + 8;
  static constexpr int kKBytes = kWg ? kBN * DK * 2 : kBN * kLdk * 2, kVBytes = kBN * kLdv * 2;
  static constexpr int kQBytes = kWg ? kBM * DK * 2 : 0;  // queries: DK / 64 atoms of kBM rows
  static constexpr size_t kSmemBytes = size_t(kQBytes) + 2 * size_t(kKBytes + kVBytes) + (kWg ? 1024 : 0);
  static_assert(DN % 8 == 0 && DR % 8 == 0 && DK % 16 == 0 && DV % 16 == 0, "head widths");
  static_assert(kBN * (DK / 8) % kThreads == 0 && kBN * (DV / 8) % kThreads == 0, "copy chunks");
  static_assert(kKBytes % 1024 == 0 && kVBytes % 16 == 0, "stage alignment");
};

template <int DN, int DR, int DV>
__global__ void __launch_bounds__(kThreads, 1) mla_flash_kernel(const MlaFlashLaunch l) {
  using S = FlashShape<DN, DR, DV>;
  constexpr int DK = S::DK, kLdk = S::kLdk, kLdv = S::kLdv;
  constexpr bool kWg = S::kWg;
  constexpr int kKChunks = kBN * (DK / 8) / kThreads, kVChunks = kBN * (DV / 8) / kThreads;
  // Shared memory: [queries (wgmma)] [2 key stages] [2 value stages], 1024-byte aligned for wgmma.
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw), base = kWg ? (raw + 1023u) & ~1023u : raw;
  uint8_t* const sm = smem_raw + (base - raw);
  uint8_t* const Qs = sm;
  uint8_t* const Ks = sm + S::kQBytes;
  uint8_t* const Vs = Ks + 2 * S::kKBytes;

  const int qb = int(gridDim.x) - 1 - int(blockIdx.x), h = int(blockIdx.y);
  const int64_t q0 = int64_t(qb) * kBM, T = l.T;
  const int64_t kend = l.p0 + min(T, q0 + kBM);  // keys [0, kend) are visible to some row of the block
  const int nkb = int((kend + kBN - 1) / kBN);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int64_t kv_head = int64_t(h) * (DN + DV);

  // Queries [q_nope ; q_pe] as bf16: wgmma, the block's rows into swizzled atoms (row r, 16-byte
  // chunk j of atom a at a·kBM·128 + r·128 + ((j ^ r % 8) · 16)); mma.sync, this warp's rows q0 + 16
  // warp + g (+ 8) as A fragments of the k16 steps.
  uint32_t qf[kWg ? 1 : DK / 16][4];
  if constexpr (kWg) {
    for (int c = tid; c < kBM * (DK / 8); c += kThreads) {
      const int r = c / (DK / 8), q = c % (DK / 8), a = q / 8, j = q % 8;
      float2 v[4] = {};  // 8-byte loads: q's row stride is only required to be even
      if (q0 + r < T) {
        const float* src = l.q + (q0 + r) * l.q_stride + int64_t(h) * DK + q * 8;
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = *reinterpret_cast<const float2*>(src + 2 * i);
      }
      *reinterpret_cast<uint4*>(Qs + a * kBM * 128 + r * 128 + ((j ^ (r & 7)) << 4)) =
          make_uint4(pack_bf16(v[0].x, v[0].y), pack_bf16(v[1].x, v[1].y), pack_bf16(v[2].x, v[2].y),
                     pack_bf16(v[3].x, v[3].y));
    }
    fence_proxy_async_shared();  // published to the wgmma by the first iteration's barrier
  } else {
    const int64_t r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    const float* q_r0 = l.q + r0 * l.q_stride + int64_t(h) * DK;
    const float* q_r1 = l.q + r1 * l.q_stride + int64_t(h) * DK;
    auto ld = [&](const float* row, bool ok, int c) {
      return ok ? *reinterpret_cast<const float2*>(row + c) : make_float2(0.0f, 0.0f);
    };
#pragma unroll
    for (int kk = 0; kk < DK / 16; ++kk) {
      const int c = kk * 16 + 2 * t;
      const float2 a0 = ld(q_r0, r0 < T, c), a1 = ld(q_r1, r1 < T, c);
      const float2 a2 = ld(q_r0, r0 < T, c + 8), a3 = ld(q_r1, r1 < T, c + 8);
      qf[kk][0] = pack_bf16(a0.x, a0.y), qf[kk][1] = pack_bf16(a1.x, a1.y);
      qf[kk][2] = pack_bf16(a2.x, a2.y), qf[kk][3] = pack_bf16(a3.x, a3.y);
    }
  }

  // Key block kb into a stage: rows past kend zero-filled (their probabilities are 0, and 0 · V must
  // not meet stale NaNs).
  auto load_kv = [&](int stage, int kb) {
    const int64_t key0 = int64_t(kb) * kBN;
    uint8_t* ks = Ks + stage * S::kKBytes;
    uint8_t* vs = Vs + stage * S::kVBytes;
#pragma unroll
    for (int i = 0; i < kKChunks; ++i) {
      const int c = tid + kThreads * i, r = c / (DK / 8), q = c % (DK / 8), col = q * 8;
      const int64_t key = key0 + r;
      const bool ok = key < kend;
      const __nv_bfloat16* src =
          col < DN ? l.kv + key * l.kv_stride + kv_head + col : l.k_pe + key * l.k_pe_stride + (col - DN);
      const int dst =
          kWg ? (q / 8) * (kBN * 128) + r * 128 + (((q % 8) ^ (r & 7)) << 4) : (r * kLdk + col) * 2;
      cp_async16(ks + dst, ok ? src : l.kv, ok);
    }
#pragma unroll
    for (int i = 0; i < kVChunks; ++i) {
      const int c = tid + kThreads * i, r = c / (DV / 8), col = (c % (DV / 8)) * 8;
      const int64_t key = key0 + r;
      const bool ok = key < kend;
      cp_async16(vs + (r * kLdv + col) * 2, ok ? l.kv + key * l.kv_stride + kv_head + DN + col : l.kv, ok);
    }
  };

  float o[DV / 8][4];
#pragma unroll
  for (int j = 0; j < DV / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m[2] = {-1e30f, -1e30f}, lsum[2] = {0.0f, 0.0f};
  const float k2 = l.scale * 1.4426950408889634f;
  const int64_t pos_first = l.p0 + q0 + warp * 16;  // position of this warp's first row
  const int64_t pos[2] = {pos_first + g, pos_first + g + 8};
  // ldmatrix lanes: keys as B of the scores (n = key, k = dim), values transposed as B of P · V.
  const int b_n = (lane >> 4) * 8 + (lane & 7), b_k = ((lane >> 3) & 1) * 8;
  const int v_k = ((lane >> 3) & 1) * 8 + (lane & 7), v_n = (lane >> 4) * 8;
  const int wg = warp >> 2;  // wgmma: this warp's warpgroup owns rows 64 wg .. 64 wg + 63

  load_kv(0, 0);
  cp_async_commit();
  for (int kb = 0; kb < nkb; ++kb) {
    cp_async_wait<0>();
    if constexpr (kWg) fence_proxy_async_shared();
    __syncthreads();  // block kb landed for every thread; every warp is done with block kb - 1
    if (kb + 1 < nkb) load_kv((kb + 1) & 1, kb + 1);
    cp_async_commit();
    const uint8_t* ks = Ks + (kb & 1) * S::kKBytes;
    const __nv_bfloat16* vs = reinterpret_cast<const __nv_bfloat16*>(Vs + (kb & 1) * S::kVBytes);

    // s[4 j + c]: the C fragment of n8 tile j (keys key0 + 8 j ..) of this warp's 16 rows.
    float s[kBN / 2];
#pragma unroll
    for (int i = 0; i < kBN / 2; ++i) s[i] = 0.0f;
    if constexpr (kWg) {
      const uint32_t qa = smem_addr(Qs) + wg * 64 * 128, ka = smem_addr(ks);
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) wgmma_fence_operand(s[i]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < DK / 16; ++kk) {  // atom kk / 4, k16 slice kk % 4 (32 bytes each)
        const uint32_t sl = (kk % 4) * 32;
        wgmma_m64n64k16_bf16(s, wgmma_desc_sw128(qa + (kk / 4) * kBM * 128 + sl),
                             wgmma_desc_sw128(ka + (kk / 4) * kBN * 128 + sl), true);
      }
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) wgmma_fence_operand(s[i]);
    } else {
      const __nv_bfloat16* kh = reinterpret_cast<const __nv_bfloat16*>(ks);
#pragma unroll
      for (int kk = 0; kk < DK / 16; ++kk)
#pragma unroll
        for (int p = 0; p < kBN / 16; ++p) {
          uint32_t r[4];
          ldmatrix_x4(r, kh + (p * 16 + b_n) * kLdk + kk * 16 + b_k);
          mma_16816(*reinterpret_cast<float(*)[4]>(s + 8 * p), qf[kk], r[0], r[1]);
          mma_16816(*reinterpret_cast<float(*)[4]>(s + 8 * p + 4), qf[kk], r[2], r[3]);
        }
    }
    const int64_t key0 = int64_t(kb) * kBN;
    if (key0 + kBN - 1 > pos_first) {  // some key of the block lies after some row of the warp
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (key0 + j * 8 + 2 * t + (c & 1) > pos[c >> 1]) s[4 * j + c] = -INFINITY;
    }
    // Online softmax per row half (rows g and g + 8), base 2; the quad of a row shares max and scale.
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * hf], s[4 * j + 2 * hf + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[hf], mx * k2);
      const float alpha = fast_exp2(m[hf] - m_new);
      m[hf] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
        for (int c = 2 * hf; c < 2 * hf + 2; ++c) {
          const float p = fast_exp2(fmaf(s[4 * j + c], k2, -m_new));
          s[4 * j + c] = p;
          sum += p;
        }
      lsum[hf] = lsum[hf] * alpha + sum;
#pragma unroll
      for (int j = 0; j < DV / 8; ++j) o[j][2 * hf] *= alpha, o[j][2 * hf + 1] *= alpha;
    }
    // o += P · V over the block's keys, P from the score registers.
#pragma unroll
    for (int kj = 0; kj < kBN / 16; ++kj) {
      const float* s0 = s + 8 * kj;
      const uint32_t a[4] = {pack_bf16(s0[0], s0[1]), pack_bf16(s0[2], s0[3]), pack_bf16(s0[4], s0[5]),
                             pack_bf16(s0[6], s0[7])};
#pragma unroll
      for (int np = 0; np < DV / 16; ++np) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, vs + (kj * 16 + v_k) * kLdv + np * 16 + v_n);
        mma_16816(o[2 * np], a, r[0], r[1]);
        mma_16816(o[2 * np + 1], a, r[2], r[3]);
      }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    float sum = lsum[hf];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = 1.0f / sum;
    const int64_t row = q0 + warp * 16 + g + 8 * hf;
    if (row >= T) continue;
    float* out = l.o + row * l.o_stride + int64_t(h) * DV;
#pragma unroll
    for (int j = 0; j < DV / 8; ++j)
      *reinterpret_cast<float2*>(out + j * 8 + 2 * t) =
          make_float2(o[j][2 * hf] * inv, o[j][2 * hf + 1] * inv);
  }
}

template <int DN, int DR, int DV>
void launch_shape(const MlaFlashLaunch& l) {
  const auto kernel = mla_flash_kernel<DN, DR, DV>;
  const size_t smem = FlashShape<DN, DR, DV>::kSmemBytes;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
        "mla flash smem attribute");
  const dim3 grid(unsigned((l.T + kBM - 1) / kBM), unsigned(l.H));
  kernel<<<grid, kThreads, smem>>>(l);
  check_launch("mla flash kernel");
}

}  // namespace

void launch_mla_flash(const MlaFlashLaunch& l) {
  require(l.T > 0 && l.H > 0 && l.H <= 65535 && (l.T + kBM - 1) / kBM <= 0x7fffffff,
          "mla flash (CUDA): bad shape");
  if (l.dn == 128 && l.dr == 64 && l.dv == 128) return launch_shape<128, 64, 128>(l);
  if (l.dn == 64 && l.dr == 32 && l.dv == 64) return launch_shape<64, 32, 64>(l);
  require(false, "mla flash (CUDA): head widths not built");
}

}  // namespace ds::cuda
