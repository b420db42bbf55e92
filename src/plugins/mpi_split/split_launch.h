// `stasis launch --mpi -- mpirun ... ./prog` (src/plugins/mpi_split/README.md, Launch): the MPI
// launcher and its helpers stay outside the computation, and each rank is the launched process of
// a tree of its own, as Slurm's tasks are (plugins/launchers/slurm_tasks.h).
#pragma once

namespace stasis::rt {
// The mark `stasis launch --mpi` puts in STASIS_LAUNCH_PID in place of a pid.
constexpr const char kMpiRankMark[] = "mpi-rank";
// Before joining: true in a process under the mark that is no MPI rank (mpirun, orted, Hydra's
// proxy): it never joins, and its children find the mark as it found it.
bool mpi_launcher_stays_outside();
// Under the mark, in an MPI rank (OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK set): makes it the
// launched process of its tree (STASIS_LAUNCH_PID becomes its pid) and returns true.
bool adopt_mpi_rank(const char* launch_pid);
}  // namespace stasis::rt
