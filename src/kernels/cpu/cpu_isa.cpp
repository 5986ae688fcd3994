#include "kernels/cpu/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "core/check.h"

namespace ds {

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Scalar:
      return "scalar";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
  }
  return "?";
}

CpuIsa parse_cpu_isa(std::string_view name) {
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
    if (name == cpu_isa_name(isa)) return isa;
  fail("DS_CPU_ISA={}: unknown instruction set (expected scalar, avx2 or avx512)", name);
}

CpuIsa cpu_isa_supported() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return CpuIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::Avx2;
#endif
  return CpuIsa::Scalar;
}

namespace {
CpuIsa decide_isa() {
  const CpuIsa best = cpu_isa_supported();
  const char* env = std::getenv("DS_CPU_ISA");
  if (env == nullptr || *env == '\0') return best;
  const CpuIsa want = parse_cpu_isa(env);
  DS_CHECK(int(want) <= int(best), "DS_CPU_ISA={}: this CPU supports at most {}", env, cpu_isa_name(best));
  return want;
}
}  // namespace

CpuIsa cpu_isa_active() {
  static const CpuIsa isa = decide_isa();  // a throw leaves it undecided: the next call throws again
  return isa;
}

std::vector<CpuIsa> cpu_isas_runnable() {
  std::vector<CpuIsa> v;
  for (int i = 0; i <= int(cpu_isa_supported()); ++i) v.push_back(CpuIsa(i));
  return v;
}

}  // namespace ds
