// SimExecutor: a step lasts exactly the cost model's step time, fake tokens are a pure function of
// (seed, request, position), and checkpoint/restore/host-load work is charged.
#include <gtest/gtest.h>

#include "core/check.h"
#include "exec/sim_executor.h"
#include "plan/hardware_profile.h"
#include "plan/model_profile.h"

namespace ds {
namespace {

class SimExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new ModelProfile(ModelProfile::load("kimi-k3"));
    hw_ = new HardwareProfile(HardwareProfile::load("b300"));
    cost_ = new CostModel(*model_, *hw_, CostOptions{.tp = 8});
  }
  static void TearDownTestSuite() {
    delete cost_;
    delete hw_;
    delete model_;
  }
  static ModelProfile* model_;
  static HardwareProfile* hw_;
  static CostModel* cost_;
};
ModelProfile* SimExecutorTest::model_ = nullptr;
HardwareProfile* SimExecutorTest::hw_ = nullptr;
CostModel* SimExecutorTest::cost_ = nullptr;

SchedulePlan plan_of(std::vector<ScheduledSeq> seqs) {
  SchedulePlan p;
  p.step_index = 1;
  for (auto& s : seqs) p.n_scheduled_tokens += s.n_tokens();
  p.seqs = std::move(seqs);
  return p;
}

ScheduledSeq seq(RequestId id, int64_t begin, int64_t end, bool samples) {
  ScheduledSeq s;
  s.request_id = id;
  s.begin = begin;
  s.end = end;
  s.samples = samples;
  return s;
}

TEST_F(SimExecutorTest, StepLastsTheCostModelStepTime) {
  SimExecutor ex(*cost_, {.seed = 3});
  SchedulePlan plan = plan_of({seq(1, 0, 4096, false), seq(2, 1000, 1001, true)});
  StepWork work;
  work.seqs = {SeqWork{.n_new_tokens = 4096, .n_context_tokens = 0},
               SeqWork{.n_new_tokens = 1, .n_context_tokens = 1000}};
  double expected = cost_->step(work).total_s;
  ASSERT_GT(expected, 0);
  StepResult r = ex.execute(plan);
  EXPECT_DOUBLE_EQ(r.duration_s, expected);
  EXPECT_DOUBLE_EQ(ex.last_cost().total_s, expected);
  ASSERT_EQ(r.sampled_tokens.size(), 1u);  // only the decode samples
  ex.execute(plan);
  EXPECT_EQ(ex.n_steps(), 2);
  EXPECT_DOUBLE_EQ(ex.total_cost().total_s, 2 * expected);
  // Every part of the breakdown is accumulated, not only some of them.
  const StepCost one = cost_->step(work);
  EXPECT_DOUBLE_EQ(ex.total_cost().comm_s, 2 * one.comm_s);
  EXPECT_GT(ex.total_cost().comm_s, 0);
  EXPECT_DOUBLE_EQ(ex.total_cost().overhead_s, 2 * one.overhead_s);
}

TEST_F(SimExecutorTest, FakeTokensAreDeterministicPerSeed) {
  SimExecutor a(*cost_, {.seed = 7}), b(*cost_, {.seed = 7}), c(*cost_, {.seed = 8});
  SchedulePlan plan = plan_of({seq(5, 0, 100, true), seq(6, 0, 50, true)});
  StepResult ra = a.execute(plan), rb = b.execute(plan), rc = c.execute(plan);
  EXPECT_EQ(ra.sampled_tokens, rb.sampled_tokens);
  EXPECT_NE(ra.sampled_tokens, rc.sampled_tokens);
  EXPECT_EQ(ra.sampled_tokens[0], a.fake_token(5, 100));
  EXPECT_EQ(ra.sampled_tokens[1], a.fake_token(6, 50));
  for (int32_t t : ra.sampled_tokens) EXPECT_GE(t, 0);
}

TEST_F(SimExecutorTest, HostLoadsCheckpointsAndRestoresCostTime) {
  SimExecutor plain(*cost_, {}), loaded(*cost_, {}), ckpt(*cost_, {});
  ScheduledSeq s = seq(1, 65536, 65536 + 2048, false);
  double t_plain = plain.execute(plan_of({s})).duration_s;
  ScheduledSeq with_load = s;
  with_load.host_load_bytes = int64_t{8} << 30;  // 8 GiB per GPU over the host link
  with_load.restore_from = CheckpointRef{1, 0};
  double t_loaded = loaded.execute(plan_of({with_load})).duration_s;
  EXPECT_GT(t_loaded, t_plain + 0.05);  // > 50 ms for 8 GiB on any PCIe/C2C link
  ScheduledSeq with_ckpt = s;
  with_ckpt.checkpoints = {{65536 + 1024, 0}, {65536 + 2048, 1}};
  EXPECT_GT(ckpt.execute(plan_of({with_ckpt})).duration_s, t_plain);
}

TEST_F(SimExecutorTest, EmptyPlanTakesNoTime) {
  SimExecutor ex(*cost_, {});
  StepResult r = ex.execute(SchedulePlan{});
  EXPECT_DOUBLE_EQ(r.duration_s, 0);
  EXPECT_TRUE(r.sampled_tokens.empty());
}

}  // namespace
}  // namespace ds
