// The barrier table (protocol/barriers.h) reads as the sequences the coordinator runs.
#include "protocol/barriers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/protocol.h"

using namespace stasis::protocol;

namespace {

std::vector<std::string> walk(Sequence sequence) {
  std::vector<std::string> names;
  for (const BarrierStep* step = &first_step(sequence); step != nullptr;
       step = step->next == Barrier::None ? nullptr : find_step(sequence, step->next)) {
    names.push_back(step->name != nullptr ? step->name : "<plugins>");
  }
  return names;
}

TEST(Barriers, SequencesReadTopDown) {
  EXPECT_EQ(walk(Sequence::Checkpoint),
            (std::vector<std::string>{"suspend", "children", "drain", "<plugins>", "checkpoint",
                                      "resume", "commit"}));
  EXPECT_EQ(walk(Sequence::Restart), (std::vector<std::string>{"restart", "resume"}));
}

TEST(Barriers, NamesOnTheWire) {
  EXPECT_EQ(barrier_named("checkpoint"), Barrier::Checkpoint);
  EXPECT_EQ(barrier_named("resume"), Barrier::Resume);
  EXPECT_EQ(barrier_named("ib-quiesce"), Barrier::Plugin);
  EXPECT_EQ(barrier_named(""), Barrier::Plugin);
  EXPECT_STREQ(barrier_name(Barrier::Restart), "restart");
  EXPECT_STREQ(barrier_name(Barrier::Plugin), "");
  for (const char* name :
       {"suspend", "children", "drain", "checkpoint", "resume", "commit", "restart"})
    EXPECT_TRUE(is_builtin_barrier_name(name)) << name;
  EXPECT_FALSE(is_builtin_barrier_name("ib-quiesce"));
}

TEST(Barriers, EveryBuiltInBarrierSaysWhatItMeansAndFitsTheWire) {
  for (const BarrierStep& step : kBarrierSteps) {
    EXPECT_NE(std::string(step.meaning), "");
    if (step.barrier == Barrier::Plugin) continue;
    ASSERT_NE(step.name, nullptr);
    EXPECT_LT(std::string(step.name).size(), sizeof(StasisBarrier{}.name));
    EXPECT_NE(step.state_during, nullptr);
    EXPECT_NE(step.state_after, nullptr);
  }
}

}  // namespace
