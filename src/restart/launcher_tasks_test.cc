#include "restart/launcher_tasks.h"

#include <gtest/gtest.h>

namespace stasis::restart {
namespace {

TEST(LauncherTasks, SiblingsOfOneOutsideParent) {
  // 0 and 2: tasks of slurmstepd 500; 1: 0's child; 3: the launched process of another shell.
  EXPECT_EQ(launcher_tasks({-1, 0, -1, -1}, {500, 10, 500, 77}, 0), (std::vector<size_t>{0, 2}));
}

TEST(LauncherTasks, OneRootIsNoLauncherStep) {
  EXPECT_TRUE(launcher_tasks({-1, 0, 0}, {500, 10, 10}, 0).empty());
}

TEST(LauncherTasks, OrphansOfInitAreNotTasks) {
  EXPECT_TRUE(launcher_tasks({-1, -1, -1}, {1, 1, 700}, 0).empty());
}

// Orphans a subreaper adopted share a parent, but the launched tree (the root) is not theirs:
// restart still becomes the launched process.
TEST(LauncherTasks, OrphansOfASubreaperBesideTheRootAreNotTasks) {
  EXPECT_TRUE(launcher_tasks({-1, 0, -1, -1}, {300, 10, 42, 42}, 0).empty());
}

}  // namespace
}  // namespace stasis::restart
