// The AVX-512 (F, BW, VL, DQ) build of the kernel bodies; see kernel_table.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa/kernel_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's _mm512_undefined_* self-initialise and trip -W(maybe-)uninitialized at inlined uses.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
#endif

#define DS_ISA avx512
#include "kernels/cpu/isa/vec_avx512.h"
//
#include "kernels/cpu/isa/bodies.h"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const ds::cpu::KernelTable* ds::cpu::kernel_table_avx512() {
  static const KernelTable t = avx512::make_table(CpuIsa::Avx512);
  return &t;
}
#else
const ds::cpu::KernelTable* ds::cpu::kernel_table_avx512() {
  return nullptr;
}
#endif
