// The portable build of the kernel bodies (baseline target, no intrinsics); see kernel_table.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa/kernel_table.h"

#define DS_ISA scalar
#include "kernels/cpu/isa/vec_scalar.h"
//
#include "kernels/cpu/isa/bodies.h"

const ds::cpu::KernelTable* ds::cpu::kernel_table_scalar() {
  static const KernelTable t = scalar::make_table(CpuIsa::Scalar);
  return &t;
}
