// GpuExecutor under the Engine with the device forward on the CPU (Device::Cpu): warm equals cold
// for hits from device pages and checkpoint slots, the host tier, preemption and mixed batches —
// the CI coverage of the executor wiring the CUDA build runs on the GPU (tests/gpu/cuda/).
#include "device_engine.h"

namespace ds::test {
namespace {

class GpuExecutorCpu : public ::testing::TestWithParam<std::string> {
 protected:
  const DeviceModel& model() const { return device_model(GetParam(), Device::Cpu); }
};

TEST_P(GpuExecutorCpu, FollowUpTurn) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", follow_up_turn(model()));
}
TEST_P(GpuExecutorCpu, HostTierRoundTrip) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", host_tier_round_trip(model()));
}
TEST_P(GpuExecutorCpu, Preemption) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", preemption(model()));
}
TEST_P(GpuExecutorCpu, MixedBatch) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", mixed_batch(model()));
}

INSTANTIATE_TEST_SUITE_P(Golden, GpuExecutorCpu, ::testing::Values(kKimiDir, kK3Dir),
                         [](const auto& info) { return info.param == kKimiDir ? "KimiLinear" : "K3"; });

// Kimi Linear only: K3's attention residuals keep its steps eager.
TEST(GpuExecutorCpuGraphs, DecodeStepsMatchEager) {
  const DeviceModel& graphs =
      device_model(kKimiDir, Device::Cpu, Precision::F32, AttnResMode::Reference, Path::Graphs);
  std::printf("    graphs-vs-eager max |diff| %.3g\n",
              decode_graphs_match_eager(graphs, device_model(kKimiDir, Device::Cpu)));
}

// Greedy and top-k 1 requests sampled by the device argmax (graphs on and off) agree with the host.
TEST(GpuExecutorCpuArgmax, MatchesHostSampler) {
  for (const DeviceModel* m :
       {&device_model(kKimiDir, Device::Cpu),
        &device_model(kKimiDir, Device::Cpu, Precision::F32, AttnResMode::Reference, Path::Graphs)})
    std::printf("    device-argmax tokens %lld\n", static_cast<long long>(device_argmax_matches_host(*m)));
}

}  // namespace
}  // namespace ds::test
