// Instruction-set dispatch: DS_CPU_ISA names, the active path follows DS_CPU_ISA (so the ctest runs
// with DS_CPU_ISA=scalar/avx2 really test those bodies), and runs that force a path this CPU lacks
// are skipped instead of failing.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/check.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/isa/kernel_table.h"

namespace ds {
namespace {

// Skips the whole binary when DS_CPU_ISA asks for a path this CPU cannot run.
class ForcedIsaEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const char* env = std::getenv("DS_CPU_ISA");
    if (env == nullptr || *env == '\0') return;
    if (int(parse_cpu_isa(env)) > int(cpu_isa_supported()))
      GTEST_SKIP() << "DS_CPU_ISA=" << env << " but this CPU supports at most "
                   << cpu_isa_name(cpu_isa_supported());
  }
};
testing::Environment* const kForcedIsa = testing::AddGlobalTestEnvironment(new ForcedIsaEnvironment);

TEST(CpuIsa, NamesRoundTrip) {
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
    EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  EXPECT_THROW(parse_cpu_isa("avx3"), Error);
  EXPECT_THROW(parse_cpu_isa("AVX2"), Error);
  EXPECT_THROW(parse_cpu_isa(""), Error);
}

TEST(CpuIsa, ActivePathFollowsTheEnvironment) {
  const char* env = std::getenv("DS_CPU_ISA");
  const CpuIsa want = env && *env ? parse_cpu_isa(env) : cpu_isa_supported();
  EXPECT_EQ(cpu_isa_active(), want);
  EXPECT_EQ(cpu::kernels().isa, want);
}

TEST(CpuIsa, EveryRunnablePathHasItsBodies) {
  const auto isas = cpu_isas_runnable();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), CpuIsa::Scalar);
  EXPECT_EQ(isas.back(), cpu_isa_supported());
  for (CpuIsa isa : isas) {
    const cpu::KernelTable& t = cpu::kernel_table(isa);
    EXPECT_EQ(t.isa, isa);
    EXPECT_EQ(t.kda_tile_cols % t.lanes, 0);
    // One body from the table, called directly: exp(0) = 1, exp(1) = e.
    const float x[3] = {0.0f, 1.0f, -1.0f};
    float y[3];
    t.exp(x, 3, y);
    EXPECT_EQ(y[0], 1.0f) << cpu_isa_name(isa);
    EXPECT_NEAR(y[1], 2.7182817f, 3e-7f) << cpu_isa_name(isa);
    EXPECT_NEAR(y[2], 0.36787944f, 4e-8f) << cpu_isa_name(isa);
  }
}

}  // namespace
}  // namespace ds
