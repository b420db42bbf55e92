// The process tree of a checkpoint and its forking: parent/child relations by virtual pid, the
// computation's pid table, and the processes that fork their children (and zombies) before
// becoming their image. The launched process (the ancestor of the others) stays this process,
// so a shell's job control still sees the pid it started.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "image/reader.h"
#include "restart/loader_protocol.h"
#include "restart/parts.h"
#include "restart/process_restore.h"

namespace stasis::restart {

struct ProcessTree {
  std::vector<int> parent;                    // index of each process's parent, -1: not restarted
  std::vector<std::vector<size_t>> children;  // ascending virtual pids: group leaders first
  size_t root = 0;                            // the root of the largest tree

  // Throws stasis::Error if two images are the same process (virtual pid of one pid space).
  static ProcessTree plan(const std::vector<image::Image>& images);
  size_t subtree_size(size_t i) const;
};

// The computation's pid table (virtual<->real pids of `pid_space`, the coordinator, the outside
// world's standard streams), at STASIS_PID_TABLE_FD for every process to inherit. One per part:
// parts of two pid spaces restarted on one host keep a table each, so each process goes on seeing
// the pids of its own space.
StasisPidTable* create_pid_table(const StasisRestartInfo& info, const std::string& pid_space);

// Forks the tree: each process forks its children, the parts it starts on other hosts and its
// zombies, then restores itself (restore_process).
class TreeForker {
 public:
  TreeForker(const std::vector<image::Image>& images, const std::vector<std::vector<image::Image>>& ancestors,
             const ProcessTree& tree, StasisPidTable* table, const PartPlan& parts, const PartStarter& starter,
             const RestoreContext& context)
      : images_(images), ancestors_(ancestors), tree_(tree), table_(table), parts_(parts), starter_(starter),
        context_(context) {}

  // Tasks of a launcher outside the computation (srun), which come back as this process's
  // children (launcher_tasks.h); none on several hosts.
  std::vector<size_t> outside_launcher_tasks(bool several_hosts) const;
  // Other roots (processes whose parent had already ended: init adopted them) are adopted by
  // init again: started through a child that exits at once. `tasks` and the root are not.
  void start_adopted_roots(const std::vector<size_t>& tasks);
  // Forks the tasks, then stands in for their launcher.
  [[noreturn]] void restart_launcher_tasks(const std::vector<size_t>& tasks);
  // Runs in the process that becomes image i: its session and group, its children and zombies,
  // then its own descriptors and memory.
  [[noreturn]] void become(size_t i);

 private:
  std::vector<pid_t> saved_ppids() const;
  void join_group(pid_t pid, const StasisProcessRecord& proc);

  const std::vector<image::Image>& images_;
  const std::vector<std::vector<image::Image>>& ancestors_;  // of each image: what an increment builds on
  const ProcessTree& tree_;
  StasisPidTable* table_;
  const PartPlan& parts_;
  const PartStarter& starter_;
  const RestoreContext& context_;
};

}  // namespace stasis::restart
