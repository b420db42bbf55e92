// `mpirun -np N stasis restart --mpi-rank DIR` (README.md, Restart): each rank's `stasis restart`
// restores the image of its rank, as a part of the computation, with the new launcher's variables
// for the fresh MPI library the upper half starts.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace stasis::restart {
struct MpiRankPart {
  uint32_t vpid;                     // the image's process (--part)
  std::string space;                 // its pid space, empty in older checkpoints
  std::string restart_id;            // shared by every rank of this launch
  std::vector<std::string> setenv;   // NAME=VALUE of the launcher's variables
  std::set<int> launcher_sockets;    // the sockets the launcher left open (MPICH's PMI_FD): kept
};
// The part of this process's MPI rank (OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK) in the
// checkpoint `path` (a generation directory, or a root whose `latest` is one): the process the
// file mpi_split.rank-R written at the checkpoint names. The launcher's sockets are kept open for
// the restored process and named to it (STASIS_MPI_INHERITED_SOCKETS), whose fresh lower half
// takes them for its own; its other descriptors are marked close-on-exec. Throws, naming what is
// missing.
MpiRankPart mpi_rank_part(const std::string& path);
}  // namespace stasis::restart
