// The device forward (gpu/device_model.h) run on the CPU (Device::Cpu, f32): every golden case of
// both fixtures through paged latents, live and checkpoint slots and restores — the CI coverage of
// the code path the CUDA build runs on the GPU (tests/gpu/cuda/).
#include "device_golden.h"
#include "gpu/device_logits_job.h"

namespace ds::test {
namespace {

const DeviceModel& cpu_model(const std::string& dir, AttnResMode mode = AttnResMode::Reference) {
  return device_model(dir, Device::Cpu, Precision::F32, mode);
}

TEST(DeviceModelCpu, KimiLinearPrompts) {
  check_prompts(cpu_model(kKimiDir), kKimiDir, "kimi");
}
TEST(DeviceModelCpu, KimiLinearGreedyDecode) {
  check_greedy_decode(cpu_model(kKimiDir), kKimiDir, "kimi");
}
TEST(DeviceModelCpu, KimiLinearSplitAndState) {
  check_split_and_state(cpu_model(kKimiDir), kKimiDir, "kimi");
}
TEST(DeviceModelCpu, KimiLinearBatch) {
  check_batch(cpu_model(kKimiDir), kKimiDir, "kimi");
}
TEST(DeviceModelCpu, KimiLinearCheckpoints) {
  check_checkpoint_restore(cpu_model(kKimiDir), kKimiDir, "kimi");
}

// The CPU reference semantics of decode graphs (replay re-runs the recorded step after the inputs
// were rewritten in place) and of the device MoE path against the host-routed reference.
TEST(DeviceModelCpu, KimiLinearGraphDecode) {
  const DeviceModel& g =
      device_model(kKimiDir, Device::Cpu, Precision::F32, AttnResMode::Reference, Path::Graphs);
  check_greedy_decode(g, kKimiDir, "cpu.kimi.graphs");
  check_decode_paths(g, device_model(kKimiDir, Device::Cpu), kKimiDir, "cpu.kimi.graphs_vs_eager");
}
TEST(DeviceModelCpu, KimiLinearDeviceMoeMatchesReference) {
  const DeviceModel& r =
      device_model(kKimiDir, Device::Cpu, Precision::F32, AttnResMode::Reference, Path::Reference);
  check_decode_paths(device_model(kKimiDir, Device::Cpu), r, kKimiDir, "cpu.kimi.device_vs_reference");
}

TEST(DeviceModelCpu, K3Prompts) {
  check_prompts(cpu_model(kK3Dir), kK3Dir, "k3");
}
TEST(DeviceModelCpu, K3GreedyDecode) {
  check_greedy_decode(cpu_model(kK3Dir), kK3Dir, "k3");
}
TEST(DeviceModelCpu, K3SplitAndState) {
  check_split_and_state(cpu_model(kK3Dir), kK3Dir, "k3");
}
TEST(DeviceModelCpu, K3Batch) {
  check_batch(cpu_model(kK3Dir), kK3Dir, "k3");
}
TEST(DeviceModelCpu, K3Checkpoints) {
  check_checkpoint_restore(cpu_model(kK3Dir), kK3Dir, "k3");
}
TEST(DeviceModelCpu, K3PartialBlockSums) {
  check_partial_block_sums(cpu_model(kK3Dir), kK3Dir, "k3");
  check_partial_block_sums(cpu_model(kK3Dir, AttnResMode::TwoPhase), kK3Dir, "k3.two_phase");
}
// K3's device MoE (routing, Stable LatentMoE, SiTU experts token-major and grouped) against the
// host-routed reference: the fixture's dense experts, and random MXFP4 experts.
TEST(DeviceModelCpu, K3DeviceMoeMatchesReference) {
  const DeviceModel& r =
      device_model(kK3Dir, Device::Cpu, Precision::F32, AttnResMode::Reference, Path::Reference);
  check_decode_paths(cpu_model(kK3Dir), r, kK3Dir, "cpu.k3.device_vs_reference");
}
TEST(DeviceModelCpu, K3Mxfp4DeviceMoeMatchesReference) {
  check_decode_paths(mxfp4_model(kK3Dir, Device::Cpu, Precision::F32, Path::Default),
                     mxfp4_model(kK3Dir, Device::Cpu, Precision::F32, Path::Reference), kK3Dir,
                     "cpu.k3.mxfp4.device_vs_reference");
}

TEST(DeviceModelCpu, LogitsJobMatchesGolden) {  // the `deltaserve logits --device` path
  const LogitsJobResult r =
      run_device_logits_job(cpu_model(kKimiDir), gi32(kKimiDir, "prompt_65.input_ids"), 8);
  EXPECT_EQ(r.decode_tokens, gi32(kKimiDir, "decode.tokens"));
  expect_close(r.logits, gf32(kKimiDir, "prompt_65.logits"), kLogitAtol, kLogitRtol, "logits_job.prompt");
  expect_close(r.decode_logits, gf32(kKimiDir, "decode.step_logits"), kLogitAtol, kLogitRtol,
               "logits_job.decode");
}

TEST(DeviceModelCpu, BadStepsAreRejectedBeforeAnyWrite) {
  const DeviceModel& m = cpu_model(kKimiDir);
  DevicePools pools = m.make_pools(Device::Cpu, false, 16);
  pools.reserve_pages(3);
  pools.reserve_slots(1);
  const std::vector<int32_t> toks{1, 2, 3}, bad_tok{1, 9999, 3}, pages{0};
  auto seq = [&](std::span<const int32_t> t, int32_t slot) {
    DeviceSeqStep s;
    s.tokens = t, s.pages = pages, s.live_slot = slot;
    return s;
  };
  EXPECT_THROW(m.forward(DeviceStep{{seq(bad_tok, 0)}}, pools), Error);
  EXPECT_THROW(m.forward(DeviceStep{{seq(toks, 99)}}, pools), Error);
  EXPECT_THROW(m.forward(DeviceStep{{seq(toks, 0), seq(toks, 0)}}, pools), Error);  // shared slot (and page)
  DeviceSeqStep ck = seq(toks, 0);
  ck.checkpoints = {{2, 1}, {2, 1}};
  EXPECT_THROW(m.forward(DeviceStep{{ck}}, pools), Error);  // positions not ascending
  DeviceSeqStep no_pages = seq(toks, 0);
  no_pages.n_past = 20;
  EXPECT_THROW(m.forward(DeviceStep{{no_pages}}, pools), Error);  // pages do not cover the positions
}

TEST(DeviceModelCpu, K3TwoPhaseDecode) {
  check_greedy_decode(cpu_model(kK3Dir, AttnResMode::TwoPhase), kK3Dir, "k3.two_phase");
}

}  // namespace
}  // namespace ds::test
