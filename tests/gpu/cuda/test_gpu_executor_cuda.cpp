// GpuExecutor under the Engine on the GPU (label gpu; skipped without a CUDA device), f32 mode:
// warm equals cold for device hits, the pinned host tier, preemption and mixed batches.
#include "../device_engine.h"
#include "kernels/memory.h"

namespace ds::test {
namespace {

class GpuExecutorCuda : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
  const DeviceModel& model() const { return device_model(GetParam(), Device::Cuda); }
};

TEST_P(GpuExecutorCuda, FollowUpTurn) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", follow_up_turn(model()));
}
TEST_P(GpuExecutorCuda, HostTierRoundTrip) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", host_tier_round_trip(model()));
}
TEST_P(GpuExecutorCuda, Preemption) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", preemption(model()));
}
TEST_P(GpuExecutorCuda, MixedBatch) {
  std::printf("    warm-vs-cold max |diff| %.3g\n", mixed_batch(model()));
}

INSTANTIATE_TEST_SUITE_P(Golden, GpuExecutorCuda, ::testing::Values(kKimiDir, kK3Dir),
                         [](const auto& info) { return info.param == kKimiDir ? "KimiLinear" : "K3"; });

// Kimi Linear only: K3's attention residuals keep its steps eager.
TEST(GpuExecutorCudaGraphs, DecodeStepsMatchEager) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  const DeviceModel& graphs =
      device_model(kKimiDir, Device::Cuda, Precision::F32, AttnResMode::Reference, Path::Graphs);
  std::printf("    graphs-vs-eager max |diff| %.3g\n",
              decode_graphs_match_eager(graphs, device_model(kKimiDir, Device::Cuda)));
}

TEST(GpuExecutorCudaArgmax, MatchesHostSampler) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  for (const DeviceModel* m :
       {&device_model(kKimiDir, Device::Cuda),
        &device_model(kKimiDir, Device::Cuda, Precision::F32, AttnResMode::Reference, Path::Graphs)})
    std::printf("    device-argmax tokens %lld\n", static_cast<long long>(device_argmax_matches_host(*m)));
}

}  // namespace
}  // namespace ds::test
