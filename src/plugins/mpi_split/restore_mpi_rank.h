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

// `stasis launch --mpi -- mpirun --host ...` (README.md, Several hosts under mpirun): Open MPI's
// daemons, started over ssh, pass a remote rank none of mpirun's environment but OMPI_* and what
// `mca_base_env_list` names, so the ranks of other hosts would run without the runtime. Adds every
// STASIS_* variable, LD_PRELOAD and LD_LIBRARY_PATH to OMPI_MCA_mca_base_env_list (after the user's
// own list, if any). Hydra (MPICH) forwards the whole environment already. Open MPI refuses the
// list beside `-x`: where the launcher's command line has a `-x`, nothing is added and a line on
// stderr says what the user then forwards.
void forward_to_remote_ranks(const std::vector<std::string>& launcher_argv);
}  // namespace stasis::restart
