#include "restart/session.h"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "cli/coord_client.h"
#include "cli/progress.h"
#include "common/error.h"
#include "coordinator/command_environment.h"
#include "plugins/files/restore.h"
#include "restart/compatibility.h"
#include "restart/slurm_allocation.h"

namespace stasis::restart {

namespace {
bool several_hosts_or_pid_spaces(const Checkpoint& ckpt) {
  auto differ = [](const std::vector<std::string>& of_each) {
    return std::any_of(of_each.begin(), of_each.end(), [&](const auto& v) { return v != of_each.front(); });
  };
  return differ(ckpt.hosts) || differ(ckpt.pid_spaces);
}

bool holds_virtual_machine(const std::vector<image::Image>& images) {
  return std::any_of(images.begin(), images.end(), [](const image::Image& img) {
    return std::any_of(img.fds().begin(), img.fds().end(),
                       [](const StasisFdRecord& fd) { return fd.kind == STASIS_FD_KVM_VM; });
  });
}
}  // namespace

void RestartSession::run() {
  pack_setenv_entries(options_.setenv, context_.info.setenv_entries);
  Checkpoint ckpt = load_checkpoint(options_.checkpoint);
  cli::ProgressSampler verifying("stasis restart: verifying images", image::payload_bytes_verified);
  open_images(ckpt);
  // No --clock: a computation holding a virtual machine continues its clocks (its guest would
  // see the time between checkpoint and restart pass at once); decided on every image of the
  // generation, so that every part of a restart on several hosts decides alike.
  if (!options_.clock_chosen) options_.clock_continue = holds_virtual_machine(images_);
  tree_ = ProcessTree::plan(images_);
  const size_t total_processes = images_.size();
  set_aside_srun_tasks(ckpt);
  relaunch_slurm_tasks_if_any(ckpt);
  parts_ = split_into_parts(images_, tree_.parent, tree_.root, ckpt.hosts, several_hosts_, options_.hosts,
                            options_.part, options_.restart_id);
  parts_.srun_steps = std::move(srun_steps_);
  tree_ = ProcessTree::plan(images_);
  for (const auto& img : images_) {
    if (payloads_unverified_ && !options_.lazy) image::Image::open(img.path(), /*verify_payloads=*/true);  // throws, naming the damage
    ancestors_.push_back(image::open_ancestors(img, /*verify_payloads=*/!options_.lazy));
  }
  // Before the checks: regions find the files written again by path.
  restore::restore_before_checks(images_, context_.shared);
  const KernelVdso own_vdso = own_kernel_vdso();  // the tree's processes fork from this one: the same vdso
  for (const auto& img : images_)
    context_.vdso_plans[img.path()] = check_restartable(img, context_.shared.recreated_files, own_vdso);
  verifying.stop();  // its thread ends before this process forks the tree

  CoordAddress addr = coord_address_from(options_.coord);
  std::string secret = expect_restart(addr, ckpt.dir.parent_path().string());
  StasisRestartInfo& info = context_.info;
  info.generation = ckpt.generation;
  info.clock_continue = options_.clock_continue ? 1 : 0;  // each process copies context_.info
  info.restart_process_count = static_cast<uint32_t>(total_processes);
  info.coord_port = addr.port;
  snprintf(info.coord_host, sizeof info.coord_host, "%s", addr.host.c_str());
  snprintf(info.secret_hex, sizeof info.secret_hex, "%s", secret.c_str());
  context_.loader = options_.loader;
  context_.keep_fds = options_.keep_fds;
  context_.payloads_verified = !options_.lazy;

  context_.floor = 3;  // above every descriptor number any restored process uses
  for (const auto& img : images_)
    for (const auto& f : img.fds()) context_.floor = std::max(context_.floor, f.fd + 1);
  context_.floor += 3;  // the loader's feed, image and restart's stderr take the lowest numbers the program leaves free
  restore::set_descriptor_floor(context_.floor);
  // Each restored process reports a failure here, whatever its own descriptor 2 becomes.
  context_.restart_stderr = fcntl(2, F_DUPFD_CLOEXEC, context_.floor);
  // A part is one pid space (parents are found within their children's), on several hosts as on
  // one: its table translates that space's pids.
  StasisPidTable* table = create_pid_table(info, images_[tree_.root].pid_space());
  // The other hosts' parts start first: this part's TCP connections to them are made through the
  // coordinator's name service, which they publish in once running.
  starter_ = {parts_.restart_id, addr.str(), options_.hosts, options_.setenv, options_.rsh, ckpt.dir.string(),
              options_.clock_continue};
  if (several_hosts_) starter_.start_other_parts(parts_);
  // What the processes share and each kind makes once, before any description that is an end of
  // one: the restore table's prepare steps, in its order.
  restore::OtherParts cross{addr.str(), parts_.own_address, parts_.old_address, parts_.restart_id, &parts_.others};
  restore::prepare_before_fork(images_, {several_hosts_ ? &cross : nullptr, several_hosts_});
  context_.shared_descriptions = create_shared_descriptions(images_, parts_);
  restore::restore_before_fork(images_, context_.shared);  // the process-wide kinds' steps

  TreeForker tree(images_, ancestors_, tree_, table, parts_, starter_, context_);
  std::vector<size_t> tasks = tree.outside_launcher_tasks(several_hosts_);
  tree.start_adopted_roots(tasks);
  if (!tasks.empty()) tree.restart_launcher_tasks(tasks);  // never returns
  tree.become(tree_.root);                                  // never returns
}

// On several hosts only the images of this restart's part are verified (every part would
// otherwise read every host's); the others' saved socket bytes are checked as they are read.
void RestartSession::open_images(const Checkpoint& ckpt) {
  // Processes of several pid spaces come back in parts too, even from one host: each part has a
  // pid table of its own, as one virtual pid may be two processes' there.
  several_hosts_ = options_.part.vpid != 0 || several_hosts_or_pid_spaces(ckpt);
  payloads_unverified_ = several_hosts_;
  for (const auto& path : ckpt.images) {
    images_.push_back(image::Image::open(path.string(), /*verify_payloads=*/!options_.lazy && !several_hosts_));
    images_.back().load_fd_data();
    images_.back().set_pid_space(ckpt.pid_spaces[images_.size() - 1]);
  }
}

// Tasks of several nodes, restarted inside a Slurm allocation with no --hosts: a new job step
// brings each back on a node of this allocation (slurm_allocation.h). Does not return then.
void RestartSession::relaunch_slurm_tasks_if_any(const Checkpoint& ckpt) {
  if (!several_hosts_ || options_.part.vpid != 0 || !options_.hosts.empty() ||
      CommandEnvironment::read().slurm_job_nodelist.empty() ||
      !every_part_is_a_task(tree_.parent, ckpt.hosts))
    return;
  std::vector<uint32_t> vpids;
  for (const auto& img : images_) vpids.push_back(img.process().original_pid);
  SlurmRelaunch plan = plan_slurm_relaunch(tree_.parent, ckpt.hosts, vpids, allocation_nodes(), ckpt.pid_spaces);
  CoordAddress addr = coord_address_from(options_.coord);
  expect_restart(addr, ckpt.dir.parent_path().string());  // the tasks meet there, from every node
  std::vector<std::string> args = {"--restart-id", new_restart_id(), "--coord", addr.str()};
  for (const auto& assignment : options_.setenv) args.insert(args.end(), {"--setenv", assignment});
  if (options_.lazy) args.push_back("--lazy");
  exec_srun_relaunch(plan, args, ckpt.dir.string());
}

// Tasks of an srun that a process of the computation ran (a launched script's `srun`) are not
// restarted here: a new job step in this allocation brings them back, started in srun's place
// as that process's child (PartPlan::srun_steps); the rest comes back without them.
void RestartSession::set_aside_srun_tasks(Checkpoint& ckpt) {
  if (options_.part.vpid != 0) return;  // a part, or a task of such a step: the first restart decided
  std::vector<uint32_t> vpids;
  for (const auto& img : images_) vpids.push_back(img.process().original_pid);
  std::vector<bool> set_aside;
  auto allocation = [&] {
    if (CommandEnvironment::read().slurm_job_nodelist.empty())
      throw Error(fmt::format("{} holds tasks of an srun that a process of the computation ran: restart it "
                              "inside a Slurm allocation (salloc, sbatch), where a new job step brings them back",
                              ckpt.dir.string()));
    return allocation_nodes();
  };
  srun_steps_ = plan_srun_steps(vpids, ckpt.sruns, ckpt.hosts, allocation, set_aside, ckpt.pid_spaces);
  if (srun_steps_.empty()) return;
  // What a task forked comes back with it: its descendants are set aside too.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < images_.size(); i++)
      if (!set_aside[i] && tree_.parent[i] >= 0 && set_aside[static_cast<size_t>(tree_.parent[i])])
        set_aside[i] = changed = true;
  }
  const CoordAddress addr = coord_address_from(options_.coord);
  std::vector<std::string> args = {"--restart-id", new_restart_id(), "--coord", addr.str()};
  for (const auto& assignment : options_.setenv) args.insert(args.end(), {"--setenv", assignment});
  if (options_.lazy) args.push_back("--lazy");
  args.insert(args.end(), {"--clock", options_.clock_continue ? "continue" : "elapsed"});
  for (auto& [parent, steps] : srun_steps_)
    for (SrunStep& step : steps) {
      step.restart_args = args;
      step.checkpoint_dir = ckpt.dir.string();
    }
  std::vector<image::Image> kept;
  Checkpoint rest = ckpt;
  rest.images.clear(), rest.hosts.clear(), rest.sruns.clear(), rest.pid_spaces.clear();
  for (size_t i = 0; i < images_.size(); i++) {
    if (set_aside[i]) continue;
    kept.push_back(std::move(images_[i]));
    rest.images.push_back(ckpt.images[i]), rest.hosts.push_back(ckpt.hosts[i]), rest.sruns.push_back(ckpt.sruns[i]);
    rest.pid_spaces.push_back(ckpt.pid_spaces[i]);
  }
  images_ = std::move(kept);
  ckpt = std::move(rest);
  several_hosts_ = several_hosts_or_pid_spaces(ckpt);
  tree_ = ProcessTree::plan(images_);
}

// A coordinator that exits when idle (the one a launch started, whose processes were just
// killed) must stay for the processes this restart brings back; one exiting at this very
// moment is replaced.
std::string RestartSession::expect_restart(const CoordAddress& addr, const std::string& ckpt_dir) {
  CoordinatorOptions options;
  options.ckpt_dir = ckpt_dir;
  return ensure_coordinator_expecting(addr, options, STASIS_CMD_EXPECT_RESTART);
}

}  // namespace stasis::restart
