// The AVX2 + FMA build of the kernel bodies; see kernel_table.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa/kernel_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#define DS_ISA avx2
#include "kernels/cpu/isa/vec_avx2.h"
//
#include "kernels/cpu/isa/bodies.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const ds::cpu::KernelTable* ds::cpu::kernel_table_avx2() {
  static const KernelTable t = avx2::make_table(CpuIsa::Avx2);
  return &t;
}
#else
const ds::cpu::KernelTable* ds::cpu::kernel_table_avx2() {
  return nullptr;
}
#endif
