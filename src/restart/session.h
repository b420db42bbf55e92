// `stasis restart` as an engine: the command parses its options into RestartOptions and hands
// them to a RestartSession, whose run() is the whole restart sequence, top-down (as rr's
// ReplayCommand hands off to ReplaySession). See docs/architecture.md, The restart sequence.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "image/reader.h"
#include "restart/checkpoint.h"
#include "restart/parts.h"
#include "restart/process_restore.h"
#include "restart/process_tree.h"

namespace stasis {
struct CoordAddress;
}

namespace stasis::restart {

struct RestartOptions {
  std::filesystem::path checkpoint;  // a checkpoint directory or a checkpoint root
  std::string coord;                 // the coordinator, HOST:PORT ("": $STASIS_COORD or the default)
  std::string loader;                // the stasis-loader executable
  bool lazy = false;                 // map memory without verifying it first
  std::vector<std::string> setenv;   // NAME=VALUE for every restarted process
  // Restarts on several hosts (parts.h).
  std::string hosts;       // OLD=NEW,...
  std::string rsh;         // the remote launcher ("": $STASIS_RSH or ssh)
  PartName part;           // restart only the part rooted at this process (vpid 0: the first restart)
  std::string restart_id;  // names this restart's meetings (given to the parts)
  bool clock_continue = false;  // --clock=continue: monotonic clocks resume from the checkpoint's
  bool clock_chosen = false;    // --clock given; otherwise continue where an image holds a KVM VM
  std::set<int> keep_fds;       // descriptors of this process the restored one keeps (an MPI launcher's, --mpi-rank)
};

class RestartSession {
 public:
  explicit RestartSession(RestartOptions options) : options_(std::move(options)) {}
  // Verifies the checkpoint, re-creates what the processes share, forks the tree and becomes its
  // root process. Throws stasis::Error for what is refused before anything is replaced.
  [[noreturn]] void run();

 private:
  std::string expect_restart(const CoordAddress& addr, const std::string& ckpt_dir);
  void open_images(const Checkpoint& ckpt);
  void relaunch_slurm_tasks_if_any(const Checkpoint& ckpt);
  void set_aside_srun_tasks(Checkpoint& ckpt);

  RestartOptions options_;
  std::vector<image::Image> images_;
  std::vector<std::vector<image::Image>> ancestors_;  // of each image: what an increment builds on
  bool several_hosts_ = false;
  bool payloads_unverified_ = false;  // opened as several hosts' images: verified once split
  ProcessTree tree_;
  std::map<uint32_t, std::vector<SrunStep>> srun_steps_;  // set_aside_srun_tasks: by the parent's vpid
  PartPlan parts_;
  PartStarter starter_;
  RestoreContext context_;
};

}  // namespace stasis::restart
