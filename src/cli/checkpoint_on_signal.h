// `--checkpoint-on-signal SIG` of `stasis launch` and `stasis restart`: what a batch system's
// warning before the time limit (Slurm's `sbatch --signal=B:USR1@120`) turns into a checkpoint.
// docs/clusters.md, Checkpoint before the time limit.
#pragma once
#include <signal.h>

#include <string>

#include "coordinator/coord_address.h"

namespace stasis::cli {

// "USR1", "SIGUSR1" or a number; throws stasis::Error naming the option otherwise.
int signal_from_name(const std::string& name);

class CheckpointOnSignal {
 public:
  // Parses the signal's name and blocks it (and the signals passed on) at once, first thing in
  // the command: a warning that comes while it starts is kept for the watcher, not fatal.
  explicit CheckpointOnSignal(const std::string& name);
  // Forks. The child returns, with the signal mask the command started with, and goes on to be
  // the launch or the restart. The parent stays outside the computation as its parent and never
  // returns: on the signal it checkpoints the computation at `coord` and stops it (as `stasis
  // checkpoint --kill`), retrying while no process has joined yet; it passes the signals a
  // shell's job gets (INT, TERM, HUP, QUIT, USR1, USR2, CONT) to the child, and exits as the
  // child does, or with 128 + the signal once it has checkpointed on it: the status a job script
  // tests to requeue itself.
  void fork_watcher(const CoordAddress& coord);

 private:
  int sig_;
  sigset_t waited_, original_;
};

}  // namespace stasis::cli
