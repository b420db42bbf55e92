#include "restart/process_tree.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/files/process_wide_restore.h"
#include "plugins/files/restore.h"
#include "restart/launcher_tasks.h"

namespace stasis::restart {

ProcessTree ProcessTree::plan(const std::vector<image::Image>& images) {
  ProcessTree tree;
  // A virtual pid names a process within its pid space only (a host, a pid namespace): so does
  // a parent pid.
  std::map<std::pair<std::string, uint32_t>, size_t> by_vpid;
  for (size_t i = 0; i < images.size(); i++) {
    uint32_t vpid = images[i].process().original_pid;
    auto [it, added] = by_vpid.emplace(std::pair{images[i].pid_space(), vpid}, i);
    if (!added)
      throw Error(fmt::format("two images of this checkpoint are process {}{}: {} and {}", vpid,
                              images[i].pid_space().empty() ? std::string()
                                                            : fmt::format(" of pid space {}", images[i].pid_space()),
                              images[it->second].path(), images[i].path()));
  }
  tree.parent.assign(images.size(), -1);
  tree.children.assign(images.size(), {});
  for (size_t i = 0; i < images.size(); i++) {
    auto it = by_vpid.find({images[i].pid_space(), images[i].process().ppid});
    if (it != by_vpid.end() && it->second != i) {
      tree.parent[i] = static_cast<int>(it->second);
      tree.children[it->second].push_back(i);  // ascending virtual pids: group leaders first
    }
  }
  size_t best_size = 0;
  for (size_t i = 0; i < images.size(); i++) {
    if (tree.parent[i] >= 0) continue;
    size_t size = tree.subtree_size(i);
    if (size > best_size) best_size = size, tree.root = i;
  }
  return tree;
}

size_t ProcessTree::subtree_size(size_t i) const {
  size_t n = 1;
  for (size_t c : children[i]) n += subtree_size(c);
  return n;
}

StasisPidTable* create_pid_table(const StasisRestartInfo& info, const std::string& pid_space) {
  int fd = memfd_create("stasis-pids", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, sizeof(StasisPidTable)) != 0)
    throw Error(fmt::format("cannot create the pid table: {}", std::strerror(errno)));
  void* addr = mmap(nullptr, sizeof(StasisPidTable), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) throw Error("cannot map the pid table");
  StasisPidTable* table = static_cast<StasisPidTable*>(addr);
  table->magic = STASIS_PID_TABLE_MAGIC;
  std::memcpy(table->coord_host, info.coord_host, sizeof table->coord_host);
  table->coord_port = info.coord_port;
  std::memcpy(table->secret_hex, info.secret_hex, sizeof table->secret_hex);
  if (pid_space.size() >= sizeof table->pid_space)
    throw Error(fmt::format("the pid space \"{}\" is longer than the pid table holds", pid_space));
  std::memcpy(table->pid_space, pid_space.c_str(), pid_space.size() + 1);
  for (int std_fd = 0; std_fd <= 2; std_fd++) {
    struct stat st;
    if (fstat(std_fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
        table->external_count < STASIS_PID_TABLE_MAX_EXTERNAL) {
      table->external_fds[table->external_count] = std_fd;
      table->external_inodes[table->external_count++] = stasis_external_file_key(st.st_dev, st.st_ino);
    }
  }
  if (dup2(fd, STASIS_PID_TABLE_FD) < 0) throw Error("cannot place the pid table");
  close(fd);
  return table;
}

std::vector<size_t> TreeForker::outside_launcher_tasks(bool several_hosts) const {
  return several_hosts ? std::vector<size_t>{} : launcher_tasks(tree_.parent, saved_ppids(), tree_.root);
}

void TreeForker::start_adopted_roots(const std::vector<size_t>& tasks) {
  auto is_task = [&](size_t i) { return std::find(tasks.begin(), tasks.end(), i) != tasks.end(); };
  for (size_t i = 0; i < images_.size(); i++) {
    if (tree_.parent[i] >= 0 || (tasks.empty() ? i == tree_.root : is_task(i))) continue;
    pid_t middle = fork();
    if (middle < 0) throw Error("cannot fork a restarted process");
    if (middle == 0) {
      if (fork() == 0) become(i);
      _exit(0);
    }
    waitpid(middle, nullptr, 0);
  }
}

void TreeForker::restart_launcher_tasks(const std::vector<size_t>& tasks) {
  std::vector<pid_t> pids;
  for (size_t i : tasks) {
    pid_t child = fork();
    if (child < 0) throw Error("cannot fork a restarted process");
    if (child == 0) become(i);
    stasis_pid_table_map(table_, images_[i].process().original_pid, child);
    join_group(child, images_[i].process());
    pids.push_back(child);
  }
  stand_in_for_launcher(pids);
}

void TreeForker::become(size_t i) {
  const StasisProcessRecord& proc = images_[i].process();
  stasis_pid_table_map(table_, proc.original_pid, getpid());
  if (proc.sid == proc.original_pid) setsid();
  restore::enter_session(proc);
  if (proc.pgid == proc.original_pid) setpgid(0, 0);
  for (size_t c : tree_.children[i]) {
    pid_t child = fork();
    if (child < 0) throw Error("cannot fork a restarted process");
    if (child == 0) become(c);
    stasis_pid_table_map(table_, images_[c].process().original_pid, child);
    join_group(child, images_[c].process());
  }
  if (auto remote = parts_.remote_children.find(proc.original_pid); remote != parts_.remote_children.end())
    for (const RemotePart& part : remote->second) {
      const image::Image& img = parts_.others[part.index];
      pid_t child = fork();
      if (child < 0) throw Error("cannot fork a restarted process");
      if (child == 0) starter_.exec_child_part(img, context_.shared_descriptions, part);
      stasis_pid_table_map(table_, part.vpid, child);
      join_group(child, img.process());
    }
  if (auto steps = parts_.srun_steps.find(proc.original_pid); steps != parts_.srun_steps.end())
    for (const SrunStep& step : steps->second) {
      if (step.parent_space != images_[i].pid_space()) continue;  // another space's process of that pid ran it
      pid_t child = fork();
      if (child < 0) throw Error("cannot fork a job step in place of srun");
      if (child == 0) starter_.exec_srun_step(images_[i], context_.shared_descriptions, step);
      stasis_pid_table_map(table_, step.vpid, child);
    }
  for (uint32_t z = 0; z < proc.zombie_count && z < STASIS_MAX_ZOMBIES; z++) {
    const StasisZombie& zombie = proc.zombies[z];
    pid_t child = fork();
    if (child == 0) {
      if (WIFSIGNALED(zombie.wait_status)) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(WTERMSIG(zombie.wait_status), SIG_DFL);
        kill(getpid(), WTERMSIG(zombie.wait_status));
      }
      _exit(WEXITSTATUS(zombie.wait_status));
    }
    if (child > 0) stasis_pid_table_map(table_, zombie.vpid, child);
  }
  join_group(0, proc);
  restore::enter_process_group(proc);
  try {
    restore_process(context_, images_[i], ancestors_[i]);
  } catch (const std::exception& e) {
    report_restart_failure(context_, fmt::format("process {}: {}", proc.original_pid, e.what()));
    _exit(1);
  }
}

// Puts `pid` (0: this process) into its saved process group when that group's leader is part of
// the computation (and so already exists).
void TreeForker::join_group(pid_t pid, const StasisProcessRecord& proc) {
  if (proc.pgid == proc.original_pid || proc.sid == proc.original_pid) {
    // Not a session leader's: its setsid() would fail once it leads a group.
    if (pid && proc.sid != proc.original_pid) setpgid(pid, pid);
    return;
  }
  uint32_t leader = stasis_pid_table_lookup(table_->real_of_virtual, proc.pgid);
  if (leader) setpgid(pid, static_cast<pid_t>(leader));
}

std::vector<pid_t> TreeForker::saved_ppids() const {
  std::vector<pid_t> ppids;
  for (const auto& img : images_) ppids.push_back(img.process().ppid);
  return ppids;
}

}  // namespace stasis::restart
