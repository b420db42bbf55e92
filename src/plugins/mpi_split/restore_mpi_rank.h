// `mpirun -np N stasis restart --mpi-rank DIR` (README.md, Restart): each rank's `stasis restart`
// restores the image of its rank, as a part of the computation, with the new launcher's variables
// for the fresh MPI library the upper half starts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace stasis::restart {
struct MpiRankPart {
  uint32_t vpid;                     // the image's process (--part)
  std::string restart_id;            // shared by every rank of this launch
  std::vector<std::string> setenv;   // NAME=VALUE of the launcher's variables
};
// The part of this process's MPI rank (OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK) in the
// checkpoint `path` (a generation directory, or a root whose `latest` is one): the process the
// file mpi_split.rank-R written at the checkpoint names. Throws, naming what is missing.
MpiRankPart mpi_rank_part(const std::string& path);
}  // namespace stasis::restart
