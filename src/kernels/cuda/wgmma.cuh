// Internal to src/kernels/cuda: Hopper warpgroup MMA (wgmma, sm_90a) helpers: shared-memory matrix
// descriptors for K-major bf16 tiles in the 128-byte swizzle, the fence / commit / wait of a
// warpgroup's asynchronous products, and m64n256k16 (bf16 × bf16 -> f32) with both operands in shared
// memory, m64n64k16 and m64n96k16 likewise, m64n64k16 with A from registers, and m64n128k16 with A from
// registers and an N-major B.
//
// Tile layout (the 128-byte swizzle): a tile of rows of 64 bf16 (128 bytes) stored row after row, the
// 16-byte chunk j of row r at byte r·128 + ((j ^ (r % 8)) · 16), the tile 1024-byte aligned. Its
// descriptor: start address >> 4 (bits 0-13), leading byte offset 16 >> 4 (bits 16-29, unused for this
// layout), stride byte offset 1024 >> 4 (bits 32-45: from one group of 8 rows to the next), layout 1 =
// 128-byte swizzle (bits 62-63). The k16 slice s of a row starts 32·s bytes further (the swizzle applies
// to the address bits, so the start address advances as in an unswizzled row).
//
// Accumulators of m64nNk16 (per thread of the warpgroup: warp w = its warp in the group, g = lane / 4,
// t = lane % 4): d[4i + 0..1] = row 16w + g, columns 8i + 2t .. + 1; d[4i + 2..3] = row 16w + g + 8, the
// same columns (the mma.sync C fragment of each n8 tile).
#pragma once

#include <cstdint>

namespace ds::cuda {

// Eight accumulator operands d[i] .. d[i + 7] of an inline wgmma ("+f": read and written).
#define DS_WGMMA_D8(i)                                                                        \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])

__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t smem_byte_addr) {
  return uint64_t((smem_byte_addr & 0x3ffffu) >> 4) | (uint64_t(16 >> 4) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

// An N-major (MN-major) B operand in the 128-byte swizzle: atoms of 64 n (128 bytes) × the k rows, k row
// r of an atom at byte r·128 with its 16-byte chunks swizzled as above; stride byte offset 1024 (from
// one group of 8 k rows to the next), leading byte offset = the distance from one 64-wide n atom to the
// next (bits 16-29). Used with imm-trans-b = 1.
__device__ __forceinline__ uint64_t wgmma_desc_sw128_mn(uint32_t smem_byte_addr, uint32_t n_atom_bytes) {
  return uint64_t((smem_byte_addr & 0x3ffffu) >> 4) | (uint64_t((n_atom_bytes & 0x3ffffu) >> 4) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Ordinary shared-memory writes (cp.async included) made visible to the async proxy (wgmma reads);
// each writing thread, after its writes completed and before the barrier.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accesses of an accumulator across a point.
__device__ __forceinline__ void wgmma_fence_operand(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}

// d (+)= A · Bᵀ over a 64×256×16 slice: A 64 rows × 16 k of a K-major tile, B 256 rows × 16 k of a
// K-major tile (both by descriptor); accumulate = false: d = A · Bᵀ.
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], uint64_t a_desc, uint64_t b_desc,
                                                      bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
      "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
      "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
      "%119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : DS_WGMMA_D8(0), DS_WGMMA_D8(8), DS_WGMMA_D8(16), DS_WGMMA_D8(24), DS_WGMMA_D8(32), DS_WGMMA_D8(40),
        DS_WGMMA_D8(48), DS_WGMMA_D8(56), DS_WGMMA_D8(64), DS_WGMMA_D8(72), DS_WGMMA_D8(80), DS_WGMMA_D8(88),
        DS_WGMMA_D8(96), DS_WGMMA_D8(104), DS_WGMMA_D8(112), DS_WGMMA_D8(120)
      : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)));
}

// d (+)= A · Bᵀ over a 64×64×16 slice, both operands K-major tiles in shared memory (by descriptor).
__device__ __forceinline__ void wgmma_m64n64k16_bf16(float (&d)[32], uint64_t a_desc, uint64_t b_desc,
                                                     bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : DS_WGMMA_D8(0), DS_WGMMA_D8(8), DS_WGMMA_D8(16), DS_WGMMA_D8(24)
      : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)));
}

// d (+)= A · Bᵀ over a 64×96×16 slice, both operands K-major tiles in shared memory (by descriptor).
__device__ __forceinline__ void wgmma_m64n96k16_bf16(float (&d)[48], uint64_t a_desc, uint64_t b_desc,
                                                     bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47}, "
      "%48, %49, p, 1, 1, 0, 0;\n"
      "}\n"
      : DS_WGMMA_D8(0), DS_WGMMA_D8(8), DS_WGMMA_D8(16), DS_WGMMA_D8(24), DS_WGMMA_D8(32), DS_WGMMA_D8(40)
      : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)));
}

// d (+)= A · Bᵀ over a 64×64×16 slice: A (64 rows × 16 k) from registers, the mma.sync m16n8k16 A
// fragment of each warp's 16 rows; B a K-major tile in shared memory (by descriptor).
__device__ __forceinline__ void wgmma_m64n64k16_bf16_rs(float (&d)[32], const uint32_t (&a)[4],
                                                        uint64_t b_desc, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : DS_WGMMA_D8(0), DS_WGMMA_D8(8), DS_WGMMA_D8(16), DS_WGMMA_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate)));
}

// d += A · B over a 64×128×16 slice: A (64 rows × 16 k) from registers, the mma.sync m16n8k16 A
// fragment of each warp's 16 rows (warp w of the group: rows 16w ..); B (16 k × 128 n) N-major in
// shared memory by descriptor (wgmma_desc_sw128_mn).
__device__ __forceinline__ void wgmma_m64n128k16_bf16_rs(float (&d)[64], const uint32_t (&a)[4],
                                                         uint64_t b_desc) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      : DS_WGMMA_D8(0), DS_WGMMA_D8(8), DS_WGMMA_D8(16), DS_WGMMA_D8(24), DS_WGMMA_D8(32), DS_WGMMA_D8(40),
        DS_WGMMA_D8(48), DS_WGMMA_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc));
}

}  // namespace ds::cuda
