// Instruction-set paths of the CPU kernels. Every optimised kernel is compiled three times into one
// binary — AVX-512 (F/BW/VL/DQ), AVX2 + FMA, and a portable scalar build — and the path is chosen
// once per process from CPUID, or forced lower with the environment variable
// DS_CPU_ISA=scalar|avx2|avx512 (tests and CI run every path this way).
#pragma once

#include <string_view>
#include <vector>

namespace ds {

enum class CpuIsa : int { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// "scalar", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);

// Parses a DS_CPU_ISA value (the names above). Throws ds::Error naming the value otherwise.
CpuIsa parse_cpu_isa(std::string_view name);

// The best path this CPU (and OS) can run: AVX-512 needs F, BW, VL and DQ; AVX2 needs AVX2 and FMA.
CpuIsa cpu_isa_supported();

// The path the kernels use: DS_CPU_ISA if set, else cpu_isa_supported(). Decided on the first
// call. Throws ds::Error if DS_CPU_ISA is not a known name or asks for more than the CPU supports.
CpuIsa cpu_isa_active();

// Every path this CPU can run, slowest first (for tests).
std::vector<CpuIsa> cpu_isas_runnable();

}  // namespace ds
