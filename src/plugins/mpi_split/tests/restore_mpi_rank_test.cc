// Which image `stasis restart --mpi-rank` takes for its rank, and under which restart id and library
// (restore_mpi_rank.h): the rank file's pid and pid space, the launch's name on every node.
#include "plugins/mpi_split/restore_mpi_rank.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"

namespace stasis::restart {
namespace {
namespace fs = std::filesystem;

class MpiRankPartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    generation_ = fs::temp_directory_path() / ("stasis-mpi-rank-" + std::to_string(getpid())) / "000003";
    fs::create_directories(generation_);
    std::ofstream(generation_ / "MANIFEST.json") << "{}";
    for (const char* name : kVariables) unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVariables) unsetenv(name);
    fs::remove_all(generation_.parent_path());
  }
  void rank_file(int rank, const std::string& text) {
    std::ofstream(generation_ / ("mpi_split.rank-" + std::to_string(rank))) << text;
  }
  static bool has(const MpiRankPart& part, const std::string& assignment) {
    return std::find(part.setenv.begin(), part.setenv.end(), assignment) != part.setenv.end();
  }
  static constexpr const char* kVariables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PMIX_NAMESPACE",
                                               "SLURM_JOB_ID", "SLURM_STEP_ID", "STASIS_RESTART_ID",
                                               "STASIS_MPI_LAUNCHER", "MPI_LOCALNRANKS", "PMI_SIZE"};
  fs::path generation_;
};

TEST_F(MpiRankPartTest, SrunPmixRankTakesItsPidSpaceAndTheNamespaceAsRestartId) {
  rank_file(2, "73 b506969b-d1d9/4026532320\n");
  setenv("PMIX_RANK", "2", 1);
  setenv("PMIX_NAMESPACE", "slurm.pmix.12.0", 1);
  setenv("SLURM_JOB_ID", "12", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  MpiRankPart part = mpi_rank_part(generation_.string());
  EXPECT_EQ(part.vpid, 73u);
  EXPECT_EQ(part.space, "b506969b-d1d9/4026532320");
  EXPECT_EQ(part.restart_id, "mpi-000003-slurm.pmix.12.0");  // alike on every node
  EXPECT_TRUE(has(part, "STASIS_MPI_LAUNCHER=openmpi"));   // Open MPI speaks PMIx
  EXPECT_TRUE(has(part, "PMIX_RANK=2"));
}

TEST_F(MpiRankPartTest, SrunPmi2RankMeetsByJobStepAndStartsMpich) {
  rank_file(0, "5 boot/1\n");
  setenv("PMI_RANK", "0", 1);
  setenv("SLURM_JOB_ID", "7", 1);
  setenv("SLURM_STEP_ID", "1", 1);
  MpiRankPart part = mpi_rank_part(generation_.string());
  EXPECT_EQ(part.restart_id, "mpi-000003-slurm-7.1");
  EXPECT_TRUE(has(part, "STASIS_MPI_LAUNCHER=mpich"));
}

// Hydra's ranks on several hosts share no name (each host's proxy is their parent): refused unless
// the user gives one; on one host the launcher's pid still is one.
TEST_F(MpiRankPartTest, HydraOnSeveralHostsNeedsAGivenRestartId) {
  rank_file(1, "9 boot/1\n");
  setenv("PMI_RANK", "1", 1);
  setenv("PMI_SIZE", "4", 1);
  setenv("MPI_LOCALNRANKS", "2", 1);
  try {
    mpi_rank_part(generation_.string());
    FAIL() << "ranks of Hydra on several hosts were given the proxy's pid as their common name";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("STASIS_RESTART_ID"), std::string::npos) << e.what();
  }
  setenv("STASIS_RESTART_ID", "hydra-42", 1);
  EXPECT_EQ(mpi_rank_part(generation_.string()).restart_id, "hydra-42");
  unsetenv("STASIS_RESTART_ID");
  setenv("MPI_LOCALNRANKS", "4", 1);
  EXPECT_EQ(mpi_rank_part(generation_.string()).restart_id, "mpi-000003-" + std::to_string(getppid()));
}

TEST_F(MpiRankPartTest, OlderRankFileWithoutPidSpaceStillNamesItsProcess) {
  rank_file(1, "4242\n");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  MpiRankPart part = mpi_rank_part(generation_.string());
  EXPECT_EQ(part.vpid, 4242u);
  EXPECT_EQ(part.space, "");
  EXPECT_EQ(part.restart_id, "mpi-000003-" + std::to_string(getppid()));  // one host: the launcher
}

TEST_F(MpiRankPartTest, ChosenLibraryWinsAndABadOneIsRefused) {
  rank_file(0, "5 boot/1\n");
  setenv("PMIX_RANK", "0", 1);
  setenv("STASIS_MPI_LAUNCHER", "mpich", 1);
  EXPECT_TRUE(has(mpi_rank_part(generation_.string()), "STASIS_MPI_LAUNCHER=mpich"));
  setenv("STASIS_MPI_LAUNCHER", "lam", 1);
  EXPECT_THROW(mpi_rank_part(generation_.string()), Error);
}

TEST_F(MpiRankPartTest, MalformedOrMissingRankFilesAreRefusedNamingTheFile) {
  setenv("PMIX_RANK", "3", 1);
  for (const char* text : {"", "abc\n", "-4 boot/1\n", "5 boot/1 extra\n"}) {
    rank_file(3, text);
    try {
      mpi_rank_part(generation_.string());
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("mpi_split.rank-3"), std::string::npos) << e.what();
    }
  }
  setenv("PMIX_RANK", "9", 1);  // no file for this rank
  EXPECT_THROW(mpi_rank_part(generation_.string()), Error);
  unsetenv("PMIX_RANK");  // not started by an MPI launcher
  EXPECT_THROW(mpi_rank_part(generation_.string()), Error);
}
// `launch --mpi` has Open MPI forward the runtime's variables to other hosts' ranks, after the
// user's own list; beside the user's -x (which Open MPI does not mix with the list) it adds nothing.
TEST(ForwardToRemoteRanks, AddsTheRuntimesVariablesAfterTheUsersUnlessMinusX) {
  setenv("OMPI_MCA_mca_base_env_list", "MINE", 1);
  setenv("STASIS_COORD_FOR_TEST", "10.0.0.1:7781", 1);
  setenv("LD_PRELOAD", "/lib/libstasis.so", 1);
  forward_to_remote_ranks({"mpirun", "-x", "FOO", "-np", "2", "./prog"});
  EXPECT_STREQ(getenv("OMPI_MCA_mca_base_env_list"), "MINE");
  forward_to_remote_ranks({"mpirun", "--host", "h1,h2", "-np", "2", "./prog"});
  std::string list = getenv("OMPI_MCA_mca_base_env_list");
  EXPECT_EQ(list.rfind("MINE;", 0), 0u) << list;
  EXPECT_NE(list.find(";STASIS_COORD_FOR_TEST"), std::string::npos) << list;
  EXPECT_NE(list.find(";LD_PRELOAD"), std::string::npos) << list;
  EXPECT_EQ(list.find("OMPI_MCA"), std::string::npos) << list;
  for (const char* name : {"OMPI_MCA_mca_base_env_list", "STASIS_COORD_FOR_TEST", "LD_PRELOAD"}) unsetenv(name);
}
}  // namespace
}  // namespace stasis::restart
