// Flash-style MLA prefill in the expanded form (kernels/mla_prefill.h mla_attention_expanded): per
// (block of kBM query rows, head) one CTA walks the key blocks its rows can see. For head widths
// dn + dr that are multiples of 64 and dv = 128 (Kimi, K3: 192 and 128) everything runs on wgmma: each
// warpgroup of 64 rows computes its scores with m64n64k16 (blocks of 64 keys) or m64n96k16 (96 keys,
// the default form: MlaFlashLaunch::key_block) from [q_nope ; q_pe] and the key block [k_nope ; k_pe]
// in 128-byte-swizzled shared memory (the queries converted to bf16 once per CTA),
// and P · V with m64n128k16, the probabilities as register A fragments (the C fragments of two
// neighbouring n8 tiles are one A fragment) and the value block as an N-major swizzled B operand; P · V
// stays in flight until the next block's scores are waited for. The key/value blocks are copied by
// cp.async `ahead` blocks before their use (MlaFlashLaunch::ahead: ahead + 1 key stages, ahead + 2 value
// stages), and the queries are either in shared memory (both operands of the scores by descriptor) or,
// with MlaFlashLaunch::q_regs, this warp's rows as register A fragments (no query traffic through shared
// memory, 48 more registers per thread); lazy_rescale skips the output rescale of warps whose rows kept
// their max. Other widths (64-key blocks, one ahead): each warp keeps its 16 rows' queries as bf16 A
// fragments and uses mma.sync against the key block through ldmatrix and against V through ldmatrix.trans.
// Per warp in both: the running row max and sum (base-2 exponents) and the probabilities in registers;
// nothing of the scores reaches memory. Query blocks are issued longest first (causal: later rows see more
// keys).
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/mla_flash_launch.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace ds::cuda {
namespace {

constexpr int kBM = 128, kWarps = kBM / 16, kThreads = 32 * kWarps;

template <int DN, int DR, int DV, int AHEAD, bool QREG, int BN>
struct FlashShape {
  static constexpr int DK = DN + DR, kBN = BN;            // keys per block
  static constexpr bool kWg = DK % 64 == 0 && DV == 128;  // scores and P · V on wgmma
  static constexpr bool kQReg = kWg && QREG;              // wgmma scores with the queries in registers
  // mma.sync: shared rows padded by 16 bytes (the 8 rows of an ldmatrix land in distinct banks).
  // wgmma: keys in DK / 64 swizzled atoms of kBN rows × 128 bytes (K-major B of the scores), values
  // in DV / 64 such atoms (N-major B of P · V).
  static constexpr int kLdk = DK + 8, kLdv = DV + 8;
  static constexpr int kKBytes = kWg ? kBN * DK * 2 : kBN * kLdk * 2,
                       kVBytes = kWg ? kBN * DV * 2 : kBN * kLdv * 2;
  static constexpr int kQBytes = kWg && !kQReg ? kBM * DK * 2 : 0;  // queries: DK / 64 atoms of kBM rows
  // Block kb + AHEAD is copied at the top of block kb's step, after the barrier: the key stage it takes
  // was last read by block kb - 1's scores (waited for before the barrier); the value stage, on wgmma,
  // by block kb - 2's P · V (waited for at block kb - 1's scores), since block kb - 1's may still run.
  static constexpr int kKStages = AHEAD + 1, kVStages = kWg ? AHEAD + 2 : AHEAD + 1;
  static constexpr size_t kSmemBytes =
      size_t(kQBytes) + kKStages * size_t(kKBytes) + kVStages * size_t(kVBytes) + (kWg ? 1024 : 0);
  static_assert(AHEAD >= 1 && kSmemBytes <= 227 * 1024, "stages");
  static_assert(BN == 64 || (BN == 96 && kWg && !kQReg),
                "keys per block: 64, or 96 with the queries in smem");
  static_assert(DN % 8 == 0 && DR % 8 == 0 && DK % 16 == 0 && DV % 16 == 0, "head widths");
  static_assert(kBN * (DK / 8) % kThreads == 0 && kBN * (DV / 8) % kThreads == 0, "copy chunks");
  static_assert(kKBytes % 1024 == 0 && kVBytes % (kWg ? 1024 : 16) == 0, "stage alignment");
};

template <int DN, int DR, int DV, int AHEAD, bool QREG, bool LAZY, int BN>
__global__ void __launch_bounds__(kThreads, 1) mla_flash_kernel(const MlaFlashLaunch l) {
  using S = FlashShape<DN, DR, DV, AHEAD, QREG, BN>;
  constexpr int DK = S::DK, kLdk = S::kLdk, kLdv = S::kLdv, kBN = S::kBN;
  constexpr bool kWg = S::kWg, kQReg = S::kQReg;
  constexpr int kKChunks = kBN * (DK / 8) / kThreads, kVChunks = kBN * (DV / 8) / kThreads;
  // Shared memory: [queries (wgmma)] [key stages] [value stages], 1024-byte aligned for wgmma.
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw), base = kWg ? (raw + 1023u) & ~1023u : raw;
  uint8_t* const sm = smem_raw + (base - raw);
  uint8_t* const Qs = sm;
  uint8_t* const Ks = sm + S::kQBytes;
  uint8_t* const Vs = Ks + S::kKStages * S::kKBytes;

  const int qb = int(gridDim.x) - 1 - int(blockIdx.x), h = int(blockIdx.y);
  const int64_t q0 = int64_t(qb) * kBM, T = l.T;
  const int64_t kend = l.p0 + min(T, q0 + kBM);  // keys [0, kend) are visible to some row of the block
  const int nkb = int((kend + kBN - 1) / kBN);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int64_t kv_head = int64_t(h) * (DN + DV);

  // Queries [q_nope ; q_pe] as bf16: wgmma, the block's rows into swizzled atoms (row r, 16-byte
  // chunk j of atom a at a·kBM·128 + r·128 + ((j ^ r % 8) · 16)); mma.sync and wgmma with kQReg, this
  // warp's rows q0 + 16 warp + g (+ 8) as A fragments of the k16 steps (a warpgroup's A operand of
  // m64nNk16 from registers is the mma.sync A fragment of each warp's 16 rows).
  uint32_t qf[kWg && !kQReg ? 1 : DK / 16][4];
  if constexpr (kWg && !kQReg) {
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
  auto load_kv = [&](int kb) {
    const int64_t key0 = int64_t(kb) * kBN;
    uint8_t* ks = Ks + (kb % S::kKStages) * S::kKBytes;
    uint8_t* vs = Vs + (kb % S::kVStages) * S::kVBytes;
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
      const int c = tid + kThreads * i, r = c / (DV / 8), q = c % (DV / 8), col = q * 8;
      const int64_t key = key0 + r;
      const bool ok = key < kend;
      const int dst =
          kWg ? (q / 8) * (kBN * 128) + r * 128 + (((q % 8) ^ (r & 7)) << 4) : (r * kLdv + col) * 2;
      cp_async16(vs + dst, ok ? l.kv + key * l.kv_stride + kv_head + DN + col : l.kv, ok);
    }
  };

  // o[4 j + c]: the C fragment of value columns 8 j .. of this warp's 16 rows (the wgmma accumulator
  // of m64n128 has the same layout per warp).
  float o[DV / 2];
#pragma unroll
  for (int i = 0; i < DV / 2; ++i) o[i] = 0.0f;
  // wgmma P · V: the probabilities' A fragments stay untouched until the products completed (the
  // wait at the next block's scores), so they live across the loop's head.
  uint32_t pa[kBN / 16][4];

  float m[2] = {-1e30f, -1e30f}, lsum[2] = {0.0f, 0.0f};
  const float k2 = l.scale * 1.4426950408889634f;
  const int64_t pos_first = l.p0 + q0 + warp * 16;  // position of this warp's first row
  const int64_t pos[2] = {pos_first + g, pos_first + g + 8};
  // ldmatrix lanes: keys as B of the scores (n = key, k = dim), values transposed as B of P · V.
  const int b_n = (lane >> 4) * 8 + (lane & 7), b_k = ((lane >> 3) & 1) * 8;
  const int v_k = ((lane >> 3) & 1) * 8 + (lane & 7), v_n = (lane >> 4) * 8;
  const int wg = warp >> 2;  // wgmma: this warp's warpgroup owns rows 64 wg .. 64 wg + 63

  // One commit group per block (empty past the last), so that AHEAD - 1 groups may stay pending.
#pragma unroll
  for (int i = 0; i < AHEAD; ++i) {
    if (i < nkb) load_kv(i);
    cp_async_commit();
  }
  int kb = 0;
  do {  // nkb >= 1 (a block's first row sees key 0); no zero-trip path between a P · V and its wait
    cp_async_wait<AHEAD - 1>();
    if constexpr (kWg) fence_proxy_async_shared();
    __syncthreads();  // block kb landed for every thread; every warp is done with block kb - 1
    if (kb + AHEAD < nkb) load_kv(kb + AHEAD);
    cp_async_commit();
    const uint8_t* ks = Ks + (kb % S::kKStages) * S::kKBytes;
    const __nv_bfloat16* vs = reinterpret_cast<const __nv_bfloat16*>(Vs + (kb % S::kVStages) * S::kVBytes);

    // s[4 j + c]: the C fragment of n8 tile j (keys key0 + 8 j ..) of this warp's 16 rows. wgmma: the
    // first k16 slice overwrites s (no instruction may write a wgmma accumulator while the previous
    // block's P · V is pending, else ptxas serialises every wgmma: C7515).
    float s[kBN / 2];
    if constexpr (!kWg) {
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) s[i] = 0.0f;
    }
    if constexpr (kWg) {
      const uint32_t qa = smem_addr(Qs) + wg * 64 * 128, ka = smem_addr(ks);
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) wgmma_fence_operand(s[i]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < DK / 16; ++kk) {  // atom kk / 4, k16 slice kk % 4 (32 bytes each)
        const uint32_t sl = (kk % 4) * 32;
        const uint64_t kd = wgmma_desc_sw128(ka + (kk / 4) * kBN * 128 + sl);
        if constexpr (kQReg)
          wgmma_m64n64k16_bf16_rs(s, qf[kk], kd, kk > 0);
        else if constexpr (kBN == 96)
          wgmma_m64n96k16_bf16(s, wgmma_desc_sw128(qa + (kk / 4) * kBM * 128 + sl), kd, kk > 0);
        else
          wgmma_m64n64k16_bf16(s, wgmma_desc_sw128(qa + (kk / 4) * kBM * 128 + sl), kd, kk > 0);
      }
      wgmma_commit();
      wgmma_wait<0>();  // also the previous block's P · V
#pragma unroll
      for (int i = 0; i < kBN / 2; ++i) wgmma_fence_operand(s[i]);
#pragma unroll
      for (int i = 0; i < DV / 2; ++i) wgmma_fence_operand(o[i]);
#pragma unroll
      for (int kj = 0; kj < kBN / 16; ++kj)
#pragma unroll
        for (int c = 0; c < 4; ++c) asm volatile("" : "+r"(pa[kj][c])::"memory");
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
    float alpha[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * hf], s[4 * j + 2 * hf + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[hf], mx * k2);
      alpha[hf] = fast_exp2(m[hf] - m_new);  // exactly 1 where the row's max did not move
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
      lsum[hf] = lsum[hf] * alpha[hf] + sum;
    }
    // LAZY: the rescale is skipped where no row of the warp got a new max (the same values: o · 1).
    if (!LAZY || __any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
      for (int j = 0; j < DV / 8; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) o[4 * j + c] *= alpha[c >> 1];
    }
    // o += P · V over the block's keys, P from the score registers (the C fragments of n8 tiles 2 kj
    // and 2 kj + 1 are the A fragment of k16 slice kj).
#pragma unroll
    for (int kj = 0; kj < kBN / 16; ++kj) {
      const float* s0 = s + 8 * kj;
      pa[kj][0] = pack_bf16(s0[0], s0[1]), pa[kj][1] = pack_bf16(s0[2], s0[3]);
      pa[kj][2] = pack_bf16(s0[4], s0[5]), pa[kj][3] = pack_bf16(s0[6], s0[7]);
    }
    if constexpr (kWg) {  // left in flight: waited for at the next block's scores or after the loop
      const uint32_t va = smem_addr(vs);
#pragma unroll
      for (int i = 0; i < DV / 2; ++i) wgmma_fence_operand(o[i]);
      wgmma_fence();
#pragma unroll
      for (int kj = 0; kj < kBN / 16; ++kj)
        wgmma_m64n128k16_bf16_rs(o, pa[kj], wgmma_desc_sw128_mn(va + kj * 16 * 128, kBN * 128));
      wgmma_commit();
    } else {
#pragma unroll
      for (int kj = 0; kj < kBN / 16; ++kj)
#pragma unroll
        for (int np = 0; np < DV / 16; ++np) {
          uint32_t r[4];
          ldmatrix_x4_trans(r, vs + (kj * 16 + v_k) * kLdv + np * 16 + v_n);
          mma_16816(*reinterpret_cast<float(*)[4]>(o + 8 * np), pa[kj], r[0], r[1]);
          mma_16816(*reinterpret_cast<float(*)[4]>(o + 8 * np + 4), pa[kj], r[2], r[3]);
        }
    }
  } while (++kb < nkb);
  if constexpr (kWg) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < DV / 2; ++i) wgmma_fence_operand(o[i]);
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
          make_float2(o[4 * j + 2 * hf] * inv, o[4 * j + 2 * hf + 1] * inv);
  }
}

template <int DN, int DR, int DV, int AHEAD, bool QREG, bool LAZY, int BN = 64>
void launch_shape(const MlaFlashLaunch& l) {
  const auto kernel = mla_flash_kernel<DN, DR, DV, AHEAD, QREG, LAZY, BN>;
  const size_t smem = FlashShape<DN, DR, DV, AHEAD, QREG, BN>::kSmemBytes;
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
  if (l.dn == 128 && l.dr == 64 && l.dv == 128) {
    if (l.key_block == 96) return launch_shape<128, 64, 128, 1, false, false, 96>(l);
    if (!l.q_regs && l.ahead == 1 && !l.lazy_rescale) return launch_shape<128, 64, 128, 1, false, false>(l);
    if (!l.q_regs && l.ahead == 1) return launch_shape<128, 64, 128, 1, false, true>(l);
    if (!l.q_regs && l.ahead == 2) return launch_shape<128, 64, 128, 2, false, true>(l);
    if (!l.q_regs && l.ahead == 3) return launch_shape<128, 64, 128, 3, false, true>(l);
    if (l.q_regs && l.ahead == 1) return launch_shape<128, 64, 128, 1, true, true>(l);
    if (l.q_regs && l.ahead == 2) return launch_shape<128, 64, 128, 2, true, true>(l);
    if (l.q_regs && l.ahead == 4) return launch_shape<128, 64, 128, 4, true, true>(l);
    require(false, "mla flash (CUDA): pipeline form not built");
  }
  if (l.dn == 64 && l.dr == 32 && l.dv == 64) return launch_shape<64, 32, 64, 1, false, false>(l);
  require(false, "mla flash (CUDA): head widths not built");
}

}  // namespace ds::cuda
