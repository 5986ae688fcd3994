// The device forward on the GPU (ctest label gpu; skipped without a CUDA device): f32 mode against
// every golden case of both fixtures at their float32 tolerances (the checks of device_golden.h),
// and bf16 mode (bf16 GEMM weights, the chunked KDA kernel) teacher-forced against the golden with
// the largest logit difference reported.
#include "../device_golden.h"
#include "gpu/device_logits_job.h"
#include "kernels/memory.h"

namespace ds::test {
namespace {

class DeviceModelCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

const DeviceModel& gpu_model(const std::string& dir, Precision p = Precision::F32,
                             AttnResMode mode = AttnResMode::Reference) {
  return device_model(dir, Device::Cuda, p, mode);
}

TEST_F(DeviceModelCuda, KimiLinearPrompts) {
  check_prompts(gpu_model(kKimiDir), kKimiDir, "gpu.kimi");
}
TEST_F(DeviceModelCuda, KimiLinearGreedyDecode) {
  check_greedy_decode(gpu_model(kKimiDir), kKimiDir, "gpu.kimi");
}
TEST_F(DeviceModelCuda, KimiLinearSplitAndState) {
  check_split_and_state(gpu_model(kKimiDir), kKimiDir, "gpu.kimi");
}
TEST_F(DeviceModelCuda, KimiLinearBatch) {
  check_batch(gpu_model(kKimiDir), kKimiDir, "gpu.kimi");
}
TEST_F(DeviceModelCuda, KimiLinearCheckpoints) {
  check_checkpoint_restore(gpu_model(kKimiDir), kKimiDir, "gpu.kimi");
}

// Decode graphs (recorded once, replayed with new inputs) against the golden decode and against
// eager steps; the default device path (device routing, grouped experts, batched heads) against
// the reference path (host routing, one GEMM per expert and per head).
TEST_F(DeviceModelCuda, KimiLinearGraphDecode) {
  const DeviceModel& g =
      device_model(kKimiDir, Device::Cuda, Precision::F32, AttnResMode::Reference, Path::Graphs);
  check_greedy_decode(g, kKimiDir, "gpu.kimi.graphs");
  EXPECT_EQ(g.graphs_recorded(), 1);
  check_decode_paths(g, gpu_model(kKimiDir), kKimiDir, "gpu.kimi.graphs_vs_eager");
}
TEST_F(DeviceModelCuda, KimiLinearDeviceMoeMatchesReference) {
  const DeviceModel& r =
      device_model(kKimiDir, Device::Cuda, Precision::F32, AttnResMode::Reference, Path::Reference);
  check_prompts(r, kKimiDir, "gpu.kimi.reference");
  check_decode_paths(gpu_model(kKimiDir), r, kKimiDir, "gpu.kimi.device_vs_reference");
}

TEST_F(DeviceModelCuda, K3Prompts) {
  check_prompts(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
}
TEST_F(DeviceModelCuda, K3GreedyDecode) {
  check_greedy_decode(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
}
TEST_F(DeviceModelCuda, K3SplitAndState) {
  check_split_and_state(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
}
TEST_F(DeviceModelCuda, K3Batch) {
  check_batch(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
}
TEST_F(DeviceModelCuda, K3Checkpoints) {
  check_checkpoint_restore(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
}
TEST_F(DeviceModelCuda, K3PartialBlockSums) {
  check_partial_block_sums(gpu_model(kK3Dir), kK3Dir, "gpu.k3");
  check_partial_block_sums(gpu_model(kK3Dir, Precision::F32, AttnResMode::TwoPhase), kK3Dir,
                           "gpu.k3.two_phase");
}
TEST_F(DeviceModelCuda, K3TwoPhaseDecode) {
  check_greedy_decode(gpu_model(kK3Dir, Precision::F32, AttnResMode::TwoPhase), kK3Dir, "gpu.k3.two_phase");
}

TEST_F(DeviceModelCuda, LogitsJobMatchesGolden) {  // the `deltaserve logits --device cuda` path
  const LogitsJobResult r = run_device_logits_job(gpu_model(kK3Dir), gi32(kK3Dir, "prompt_65.input_ids"), 8);
  EXPECT_EQ(r.decode_tokens, gi32(kK3Dir, "decode.tokens"));
  expect_close(r.logits, gf32(kK3Dir, "prompt_65.logits"), kLogitAtol, kLogitRtol, "gpu.logits_job.prompt");
  expect_close(r.decode_logits, gf32(kK3Dir, "decode.step_logits"), kLogitAtol, kLogitRtol,
               "gpu.logits_job.decode");
}

// bf16: top-1 must agree wherever the golden's top-2 margin exceeds 0.1.
TEST_F(DeviceModelCuda, KimiLinearBf16) {
  check_bf16_decode(gpu_model(kKimiDir, Precision::BF16), kKimiDir, "gpu.kimi", 0.1f);
}
TEST_F(DeviceModelCuda, K3Bf16) {
  check_bf16_decode(gpu_model(kK3Dir, Precision::BF16), kK3Dir, "gpu.k3", 0.1f);
}

}  // namespace
}  // namespace ds::test
