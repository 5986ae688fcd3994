#include "kernels/cpu/isa/kernel_table.h"

#include "core/check.h"

namespace ds::cpu {

const KernelTable& kernel_table(CpuIsa isa) {
  const KernelTable* t = isa == CpuIsa::Avx512 ? kernel_table_avx512()
                         : isa == CpuIsa::Avx2 ? kernel_table_avx2()
                                               : kernel_table_scalar();
  DS_CHECK(t != nullptr, "CPU kernels: this build has no {} path", cpu_isa_name(isa));
  return *t;
}

const KernelTable& kernels() {
  static const KernelTable& t = kernel_table(cpu_isa_active());
  return t;
}

}  // namespace ds::cpu
