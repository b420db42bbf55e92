// `--checkpoint-on-signal SIG` of `stasis launch` and `stasis restart`: what a batch system's
// warning before the time limit (Slurm's `sbatch --signal=B:USR1@120`) turns into a checkpoint.
// docs/clusters.md, Checkpoint before the time limit.
#pragma once
#include <string>

#include "coordinator/coord_address.h"

namespace stasis::cli {

// "USR1", "SIGUSR1" or a number; throws stasis::Error naming the option otherwise.
int signal_from_name(const std::string& name);

// Forks. The child returns and goes on to be the launch or the restart. The parent stays outside
// the computation as its parent and never returns: on `sig` it checkpoints the computation at
// `coord` and stops it (as `stasis checkpoint --kill`), retrying while no process has joined yet;
// it passes the signals a shell's job gets (INT, TERM, HUP, QUIT, USR1, USR2, CONT) to the child,
// and exits as the child does, or with 128 + sig once it has checkpointed on sig: the status a
// job script tests to requeue itself.
void fork_checkpoint_on_signal_watcher(int sig, const CoordAddress& coord);

}  // namespace stasis::cli
