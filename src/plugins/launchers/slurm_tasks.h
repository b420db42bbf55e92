// Slurm's srun under `stasis launch`: srun itself stays out of the computation and each task it
// starts joins as a launched process (see README.md here).
#pragma once
#include "protocol/protocol.h"

namespace stasis::rt {

// Before joining, with the launch's STASIS_LAUNCH_PID. In srun: marks the environment its tasks
// inherit and returns true (srun must not join). Elsewhere returns false.
bool srun_stays_outside();

// In a process started by slurmstepd for srun (its STASIS_LAUNCH_PID carries srun's mark): makes
// it the launched process of its task (STASIS_LAUNCH_PID becomes its pid) and returns true.
bool adopt_srun_task(const char* launch_pid);

// What a task's launched process says of its srun when it joins (StasisProcessInfo::srun_*),
// when a process of the computation ran that srun; zeros otherwise.
void describe_srun_of_task(StasisProcessInfo& info);

}  // namespace stasis::rt
