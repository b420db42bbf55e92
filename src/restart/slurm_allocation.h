// Restarting Slurm tasks of several nodes in a new allocation (docs/clusters.md, Slurm): a
// checkpoint whose every part (hosts.h) is a task started by Slurm (no parent in the
// computation), restarted by `stasis restart` inside an allocation (salloc, a batch script),
// comes back through a new job step: the first `stasis restart` execs `srun`, one task per
// checkpointed task, each on the node that takes its old host's place, and each of srun's tasks
// is a `stasis restart --task-parts` that restores its own. srun stays what it was at launch,
// outside the computation: it carries the tasks' standard streams and exits with their status.
#pragma once
#include <cstdint>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "restart/hosts.h"

namespace stasis::restart {

struct SlurmNode {
  std::string name, address;  // NodeName, and its NodeAddr as a numeric address
};

struct SlurmRelaunch {
  std::string hosts_text;              // --hosts for every part: each old host = its new node's address
  std::vector<uint32_t> task_vpids;    // the part each task of the new step restores, by rank
  std::vector<std::string> task_spaces;  // and that part's pid space ("" in older checkpoints)
  std::vector<std::string> task_nodes; // the node each rank runs on
};

// The nodes of the current allocation ($SLURM_JOB_NODELIST), in its order, through `scontrol`; at
// most `limit`. Throws stasis::Error when scontrol fails or a node's address cannot be resolved.
std::vector<SlurmNode> allocation_nodes(size_t limit = SIZE_MAX);

// Where a coordinator listens by default inside a Slurm allocation (no --coord, no STASIS_COORD,
// SLURM_JOB_NODELIST set): the first node's address, port 7781, which every node of the
// allocation reaches and computes alike, so that `stasis status` on any node finds the
// coordinator a launch in the batch script started. "" outside an allocation.
std::string default_coord_in_allocation();

// Whether every part is a task with no parent in the computation (as Slurm's tasks are), not a
// process started through a remote launcher by a process of the computation.
bool every_part_is_a_task(const std::vector<int>& parents, const std::vector<std::string>& old_hosts);

// Where each of those tasks goes. `old_hosts`, `vpids`, `spaces`: each process's (no `spaces`: all
// ""). An old host that is a node
// of the allocation stays there; the others take the remaining nodes in order. Throws
// stasis::Error when the allocation has fewer nodes than the checkpoint had hosts.
SlurmRelaunch plan_slurm_relaunch(const std::vector<int>& parents, const std::vector<std::string>& old_hosts,
                                  const std::vector<uint32_t>& vpids, const std::vector<SlurmNode>& allocation,
                                  const std::vector<std::string>& spaces = {});

// Execs `srun -n N --distribution=arbitrary` (the node of each rank in a SLURM_HOSTFILE) running
// `restart_args` (this executable's `restart ...` arguments, without --task-parts, --hosts and
// the checkpoint) for every task. Does not return; throws stasis::Error if srun cannot be run.
[[noreturn]] void exec_srun_relaunch(const SlurmRelaunch& plan, std::vector<std::string> restart_args,
                                     const std::string& checkpoint_dir);

// In a task of that step: the part given for this task's rank ($SLURM_PROCID) in "P0,P1,..." (each
// a PartName's text).
PartName part_of_this_task(const std::string& task_parts);

// In a task of that step: `given` (--setenv) after the step's SLURM_* and SLURMD_* variables, so
// that the restarted task's environment names its new job, step and nodes as an uninterrupted
// task's there would (SLURM_JOB_ID, SLURM_STEP_ID, SLURM_JOB_NODELIST, SLURMD_NODENAME, ...);
// the task's own rank (SLURM_PROCID, SLURM_LOCALID, SLURM_GTIDS, SLURM_TASK_PID) and the new
// step's layout file (SLURM_HOSTFILE, SLURM_DISTRIBUTION, SLURM_ARBITRARY_NODELIST) stay as
// they were. `step`: the variables as NAME=VALUE. What does not fit the restart's room for
// assignments (STASIS_MAX_SETENV_BYTES) is left out, named on stderr; `given` always fits or
// is refused as before.
std::vector<std::string> with_step_environment(const std::vector<std::string>& step,
                                               const std::vector<std::string>& given);

// An srun that a process of the computation ran (a launched script's `srun -N 2 ./prog`): outside
// the computation, as srun always is, but its parent's child. At restart its tasks come back
// through a new job step in the current allocation, started by a child of the restarted parent
// that takes srun's virtual pid, so the parent's wait() gets the step's exit status.
struct SrunStep {
  uint32_t vpid = 0;                       // srun's virtual pid, as its parent knows it
  uint32_t parent_vpid = 0;                // the process that ran srun
  std::string parent_space;                // and its pid space ("" in older checkpoints)
  SlurmRelaunch plan;                      // where each task goes
  std::vector<std::string> restart_args;   // the tasks' `restart ...` arguments (exec_srun_relaunch)
  std::string checkpoint_dir;
};

// The sruns of the checkpoint's processes that ran one: `vpids`, `sruns` (Checkpoint::sruns) and
// `old_hosts`: each image's. Returns the steps by their parent's virtual pid and marks their
// tasks in `is_task`; a task whose srun's parent is not in the checkpoint stays a plain task.
// `allocation` is asked only when there is a step. Throws stasis::Error as plan_slurm_relaunch.
std::map<uint32_t, std::vector<SrunStep>> plan_srun_steps(
    const std::vector<uint32_t>& vpids, const std::vector<std::pair<uint32_t, uint32_t>>& sruns,
    const std::vector<std::string>& old_hosts, const std::function<std::vector<SlurmNode>()>& allocation,
    std::vector<bool>& is_task, const std::vector<std::string>& spaces = {});

}  // namespace stasis::restart
