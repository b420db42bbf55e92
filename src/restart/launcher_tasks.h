// Restarting the tasks of a launcher that is not part of the computation (Slurm's srun: its tasks
// are children of slurmstepd, a root daemon on each node). The tasks come back as children of
// `stasis restart`, which then stands in for the launcher (docs/clusters.md, Slurm).
#pragma once
#include <sys/types.h>

#include <vector>

namespace stasis::restart {

// The processes one outside process started side by side, `root` (the root of the largest tree,
// which restart would become) among them: indexes of the processes whose parent is not in the
// computation (parents[i] < 0) and whose saved parent pid (saved_ppids[i]) is root's, when there
// are at least two; else empty. Init (pid 1) launches nothing: its children are orphans.
std::vector<size_t> launcher_tasks(const std::vector<int>& parents, const std::vector<pid_t>& saved_ppids,
                                   size_t root);

// Runs in `stasis restart` once the tasks are forked: passes them the signals a launcher passes
// on (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT), waits for all of them and exits
// as srun does: with the highest exit status, a task killed by signal S counting as 128 + S.
[[noreturn]] void stand_in_for_launcher(const std::vector<pid_t>& tasks);

}  // namespace stasis::restart
