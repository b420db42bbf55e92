#include "restart/slurm_allocation.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"

namespace stasis::restart {
namespace {

const std::vector<SlurmNode> kAllocation = {{"n1", "10.0.0.1"}, {"n2", "10.0.0.2"}, {"n3", "10.0.0.3"}};

TEST(SlurmRelaunch, TasksOnlyWhenNoPartHasAParent) {
  EXPECT_TRUE(every_part_is_a_task({-1, -1, 1}, {"a", "b", "b"}));  // 2 is 1's child on its host
  EXPECT_FALSE(every_part_is_a_task({-1, 0}, {"a", "b"}));           // 1 started by 0 through ssh
}

TEST(SlurmRelaunch, OldHostsKeepTheirNodeOthersTakeTheFreeOnes) {
  // Tasks 11, 12 on 10.0.0.9 (gone), 21, 22 on 10.0.0.2 (in the allocation): .2 stays on n2, .9
  // takes n1, the first free node; ranks grouped by node.
  SlurmRelaunch plan =
      plan_slurm_relaunch({-1, -1, -1, -1}, {"10.0.0.9", "10.0.0.2", "10.0.0.9", "10.0.0.2"}, {11, 21, 12, 22}, kAllocation);
  EXPECT_EQ(plan.hosts_text, "10.0.0.9=10.0.0.1,10.0.0.2=10.0.0.2");
  EXPECT_EQ(plan.task_vpids, (std::vector<uint32_t>{11, 12, 21, 22}));
  EXPECT_EQ(plan.task_nodes, (std::vector<std::string>{"n1", "n1", "n2", "n2"}));
}

TEST(SlurmRelaunch, ChildrenOfATaskComeWithIt) {
  SlurmRelaunch plan = plan_slurm_relaunch({-1, 0, -1}, {"10.0.0.5", "10.0.0.5", "10.0.0.6"}, {7, 8, 9}, kAllocation);
  EXPECT_EQ(plan.task_vpids, (std::vector<uint32_t>{7, 9}));
}

TEST(SlurmRelaunch, TooFewNodesIsRefused) {
  EXPECT_THROW(plan_slurm_relaunch({-1, -1}, {"a", "b"}, {1, 2}, {{"n1", "10.0.0.1"}}), Error);
}

TEST(SlurmRelaunch, PartOfThisTaskByRank) {
  setenv("SLURM_PROCID", "2", 1);
  EXPECT_EQ(part_of_this_task("11,12,21").vpid, 21u);
  EXPECT_THROW(part_of_this_task("11,12"), Error);
  EXPECT_THROW(part_of_this_task("11,x,21"), Error);
  unsetenv("SLURM_PROCID");
  EXPECT_THROW(part_of_this_task("11"), Error);
}

TEST(SrunSteps, TasksOfAnSrunAProcessRanComeBackThroughAStepInItsPlace) {
  // 5 (a script) ran srun 9, whose tasks 11, 12 (host .1) and 21 (host .2); 30 is a plain task
  // and 40 names an srun whose parent is not in the checkpoint.
  std::vector<bool> is_task;
  int asked = 0;
  auto steps = plan_srun_steps({5, 11, 21, 12, 30, 40}, {{0, 0}, {9, 5}, {9, 5}, {9, 5}, {0, 0}, {8, 77}},
                               {"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.3"},
                               [&] { asked++; return kAllocation; }, is_task);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(is_task, (std::vector<bool>{false, true, true, true, false, false}));
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_EQ(steps[5].size(), 1u);
  EXPECT_EQ(steps[5][0].vpid, 9u);
  EXPECT_EQ(steps[5][0].parent_space, "");
  EXPECT_EQ(steps[5][0].plan.task_vpids, (std::vector<uint32_t>{11, 12, 21}));
  EXPECT_EQ(steps[5][0].plan.task_nodes, (std::vector<std::string>{"n1", "n1", "n2"}));
}

TEST(SlurmRelaunch, TheNewStepsVariablesButTheTasksOwnRank) {
  EXPECT_EQ(with_step_environment({"SLURM_JOB_ID=7", "SLURM_PROCID=2", "SLURMD_NODENAME=n2", "SLURM_HOSTFILE=/proc/1/fd/3"},
                                  {"A=1", "SLURM_JOB_ID=8"}),
            (std::vector<std::string>{"SLURM_JOB_ID=7", "SLURMD_NODENAME=n2", "A=1", "SLURM_JOB_ID=8"}));
  // What does not fit is left out; --setenv is kept whole.
  std::vector<std::string> many(10, "SLURM_X=" + std::string(1000, 'x'));
  EXPECT_EQ(with_step_environment(many, {"A=1"}).size(), 5u);
}

TEST(SrunSteps, NoStepAsksNoAllocation) {
  std::vector<bool> is_task;
  auto steps = plan_srun_steps({5, 6}, {{0, 0}, {0, 0}}, {"a", "b"},
                               []() -> std::vector<SlurmNode> { throw Error("not inside a Slurm allocation"); }, is_task);
  EXPECT_TRUE(steps.empty());
  EXPECT_EQ(is_task, (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace stasis::restart
