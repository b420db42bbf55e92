// The rank's part of a split MPI checkpoint (restore_mpi_rank.h).
#include "plugins/mpi_split/restore_mpi_rank.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fmt/format.h>

#include "common/error.h"

extern char** environ;

namespace stasis::restart {
namespace fs = std::filesystem;

namespace {
// What MPI launchers tell their ranks (Open MPI, PMIx, MPICH's Hydra and PMI; srun's PMI plugins
// set the same). Slurm's own SLURM_* are not among them: they would fill most of --setenv's 4 KiB;
// the fresh lower half sees the checkpoint's (tests/slurm/mpi_split_test.py restarts so).
bool launcher_variable(const char* entry) {
  static const char* const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPIR_", "OPAL_"};
  for (const char* prefix : prefixes)
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

// What every rank of this launch has alike, on every node: the PMIx namespace (Open MPI's mpirun,
// srun --mpi=pmix), else the Slurm job step (srun --mpi=pmi2), else the launcher's pid (Hydra's
// mpiexec on one host, whose ranks are its children). Hydra on several hosts gives its ranks no
// common name (each host's ranks are children of that host's proxy): refused, since ranks that
// meet under different names would wait for each other until the restart times out.
std::string launch_name() {
  if (const char* pmix = std::getenv("PMIX_NAMESPACE"); pmix && *pmix) return pmix;
  const char *job = std::getenv("SLURM_JOB_ID"), *step = std::getenv("SLURM_STEP_ID");
  if (job && *job && step && *step) return fmt::format("slurm-{}.{}", job, step);
  const char *here = std::getenv("MPI_LOCALNRANKS"), *all = std::getenv("PMI_SIZE");
  if (here && all && std::atol(here) < std::atol(all))
    throw Error(fmt::format("--mpi-rank: this launcher placed the ranks on several hosts (MPI_LOCALNRANKS={} of "
                            "PMI_SIZE={}) and names them nothing in common: set STASIS_RESTART_ID to one new "
                            "value for the whole restart (STASIS_RESTART_ID=$(date +%s%N) mpiexec ...; Hydra "
                            "passes it to every host)", here, all));
  return std::to_string(getppid());
}

// The library of this launcher: Open MPI's mpirun (OMPI_COMM_WORLD_RANK) and srun --mpi=pmix
// (PMIX_RANK; Debian's MPICH speaks PMI only) start Open MPI ranks, Hydra and srun --mpi=pmi2
// MPICH ones. STASIS_MPI_LAUNCHER=openmpi|mpich, set by the user, chooses otherwise.
std::string launcher_library() {
  if (const char* chosen = std::getenv("STASIS_MPI_LAUNCHER"); chosen && *chosen) {
    if (std::strcmp(chosen, "openmpi") != 0 && std::strcmp(chosen, "mpich") != 0)
      throw Error(fmt::format("--mpi-rank: STASIS_MPI_LAUNCHER={} is neither openmpi nor mpich", chosen));
    return chosen;
  }
  return std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("PMIX_RANK") ? "openmpi" : "mpich";
}
}  // namespace

MpiRankPart mpi_rank_part(const std::string& path) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = std::getenv("PMI_RANK");
  if (!rank) rank = std::getenv("PMIX_RANK");
  if (!rank) throw Error("--mpi-rank: not started by an MPI launcher (no OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK)");
  fs::path generation = path;
  if (!fs::exists(generation / "MANIFEST.json") && fs::exists(generation / "latest" / "MANIFEST.json"))
    generation = fs::canonical(generation / "latest");
  fs::path named = generation / fmt::format("mpi_split.rank-{}", rank);
  std::ifstream file(named);
  long vpid = 0;
  if (!(file >> vpid) || vpid <= 0)
    throw Error(fmt::format("--mpi-rank: {} is missing or holds no process number (a checkpoint of a split MPI job "
                            "launched with `stasis launch --mpi` has one per rank)", named.string()));
  MpiRankPart part;
  part.vpid = static_cast<uint32_t>(vpid);
  // Its pid space (older checkpoints: none, one host's), since two nodes may each have a process
  // of that pid; the restart refuses a pid two spaces of the checkpoint have, naming both images.
  std::string rest;
  std::getline(file, rest);
  std::istringstream words(rest);
  words >> part.space;
  std::string extra;
  if (words >> extra)
    throw Error(fmt::format("--mpi-rank: {} holds more than a process number and its pid space", named.string()));
  const char* given = std::getenv("STASIS_RESTART_ID");
  // The ranks of one launch share its name (on every node) and the generation.
  part.restart_id = given && *given ? given : fmt::format("mpi-{}-{}", generation.filename().string(), launch_name());
  // The restored environment is the checkpoint's, with the old launcher's variables in it: the
  // lower half gets this launcher's alone (STASIS_MPI_LAUNCHER_VARIABLES names them), and the
  // library of this launcher (STASIS_MPI_LAUNCHER), whichever the checkpoint ran under.
  std::string names;
  for (char** entry = environ; *entry; entry++) {
    if (!launcher_variable(*entry)) continue;
    part.setenv.emplace_back(*entry);
    const char* equals = std::strchr(*entry, '=');
    if (equals) names += (names.empty() ? "" : ",") + std::string(*entry, static_cast<size_t>(equals - *entry));
  }
  part.setenv.push_back("STASIS_MPI_LAUNCHER_VARIABLES=" + names);
  part.setenv.push_back("STASIS_MPI_LAUNCHER=" + launcher_library());
  std::string sockets;
  // Other descriptors a launcher leaves open (Hydra's proxy passes on pipes of its own) are not
  // the program's, whose come from its image: they close as the loader starts.
  std::vector<int> leaked;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = fs::read_symlink(entry.path(), error).string();
    const int fd = std::atoi(entry.path().filename().c_str());
    if (error || fd <= 2) continue;
    if (target.rfind("socket:", 0) == 0) part.launcher_sockets.insert(fd);
    else leaked.push_back(fd);
  }
  for (int fd : leaked) fcntl(fd, F_SETFD, FD_CLOEXEC);
  for (int fd : part.launcher_sockets) sockets += (sockets.empty() ? "" : ",") + std::to_string(fd);
  part.setenv.push_back("STASIS_MPI_INHERITED_SOCKETS=" + sockets);
  return part;
}

void forward_to_remote_ranks(const std::vector<std::string>& launcher_argv) {
  if (std::find(launcher_argv.begin(), launcher_argv.end(), "-x") != launcher_argv.end()) {
    std::fputs("stasis launch --mpi: the command line has -x, which Open MPI does not mix with the "
               "mca_base_env_list the launch would set: ranks on other hosts join only if STASIS_*, LD_PRELOAD "
               "and LD_LIBRARY_PATH are forwarded too (-x NAME each), or name your variables in "
               "OMPI_MCA_mca_base_env_list instead of -x\n", stderr);
    return;
  }
  constexpr const char* kList = "OMPI_MCA_mca_base_env_list";
  const char* given = std::getenv(kList);
  std::string list = given ? given : "";
  // Open MPI splits the list at ';' (mca_base_env_list_delimiter, unless the user chose another).
  const char* chosen = std::getenv("OMPI_MCA_mca_base_env_list_delimiter");
  const std::string delimiter = chosen && *chosen ? chosen : ";";
  for (char** entry = environ; *entry; entry++) {
    const char* equals = std::strchr(*entry, '=');
    if (!equals) continue;
    const std::string name(*entry, static_cast<size_t>(equals - *entry));
    if (name.rfind("STASIS_", 0) != 0 && name != "LD_PRELOAD" && name != "LD_LIBRARY_PATH") continue;
    list += (list.empty() ? "" : delimiter) + name;
  }
  setenv(kList, list.c_str(), 1);
}
}  // namespace stasis::restart
