// The rank's part of a split MPI checkpoint (restore_mpi_rank.h).
#include "plugins/mpi_split/restore_mpi_rank.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>

#include "common/error.h"

extern char** environ;

namespace stasis::restart {
namespace fs = std::filesystem;

namespace {
// What MPI launchers tell their ranks (Open MPI, PMIx, MPICH's Hydra and PMI).
bool launcher_variable(const char* entry) {
  static const char* const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPIR_", "OPAL_"};
  for (const char* prefix : prefixes)
    if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0) return true;
  return false;
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
  const char* given = std::getenv("STASIS_RESTART_ID");
  // The ranks of one launch on a host share their launcher (its pid) and the generation.
  part.restart_id = given && *given ? given : fmt::format("mpi-{}-{}", generation.filename().string(), getppid());
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
  part.setenv.push_back(std::string("STASIS_MPI_LAUNCHER=") + (std::getenv("OMPI_COMM_WORLD_RANK") ? "openmpi" : "mpich"));
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
}  // namespace stasis::restart
