#include "restart/parts.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "coordinator/command_environment.h"
#include "plugins/files/process_wide_restore.h"
#include "restart/hosts.h"

namespace fs = std::filesystem;

namespace stasis::restart {

namespace {

// A standard stream of this part's root that its parent's part holds: this restart's own stream
// at `restart_fd` stands for it.
struct OutsideStream {
  size_t image;
  int fd, restart_fd;
};

// Only standard streams can join processes on two hosts (a remote launcher carries them): a
// description this part shares with another must be a standard stream of the root of one of
// them, whose parent is in the other. Anything else both hold is refused, naming it. What this
// part's root has from its parent's part becomes what this restart has there (the remote
// launcher's stream), for every process of the part that holds it.
std::vector<OutsideStream> refuse_descriptors_across_parts(const std::vector<image::Image>& images,
                                                          const std::vector<int>& parents,
                                                          const std::vector<size_t>& roots, size_t mine,
                                                          const std::vector<std::string>& old_hosts) {
  std::vector<OutsideStream> outside_streams;
  // An owner's pid means something in its pid space only, and an inode on its kernel only.
  auto key_of = [&](size_t i, const StasisFdRecord& f) {
    if (restore::shared_by_inode(f)) return fmt::format("object {}:{} of {}", f.dev, f.ino, images[i].pid_space());
    return fmt::format("description {}:{} of {}", f.owner_pid, f.owner_fd, images[i].pid_space());
  };
  auto crosses = [](const StasisFdRecord& f) {
    return !restore::from_outside(f) && !restore::joins_hosts(f);
  };
  std::map<std::string, std::set<size_t>> parts_holding;      // key -> part roots
  std::map<std::pair<std::string, size_t>, int> root_stream;  // (key, part root) -> its number there
  for (size_t i = 0; i < images.size(); i++)
    for (const auto& f : images[i].fds())
      if (crosses(f)) {
        parts_holding[key_of(i, f)].insert(roots[i]);
        if (roots[i] == i && f.fd <= 2) root_stream.emplace(std::pair{key_of(i, f), i}, f.fd);
      }
  auto parent_part = [&](size_t part) { return parents[part] < 0 ? images.size() : roots[static_cast<size_t>(parents[part])]; };
  for (size_t i = 0; i < images.size(); i++) {
    if (roots[i] != mine) continue;
    for (const auto& f : images[i].fds()) {
      if (!crosses(f)) continue;
      std::string key = key_of(i, f);
      for (size_t part : parts_holding[key]) {
        if (part == mine) continue;
        if (root_stream.count({key, part}) && parent_part(part) == mine) continue;  // it starts that part
        if (auto from = root_stream.find({key, mine}); from != root_stream.end() && parent_part(mine) == part) {
          outside_streams.push_back({i, f.fd, from->second});
          continue;
        }
        throw Error(fmt::format("descriptor {} ({}) of process {} on {} is shared with process(es) on {}: "
                                "only standard streams of a process started on another host can be",
                                f.fd, f.path, images[i].process().original_pid, old_hosts[i], old_hosts[part]));
      }
    }
  }
  return outside_streams;
}

}  // namespace

std::string new_restart_id() {
  std::random_device random;
  return fmt::format("{:08x}{:08x}", random(), random());
}

PartPlan split_into_parts(std::vector<image::Image>& images, const std::vector<int>& parents, size_t root,
                          const std::vector<std::string>& old_hosts, bool several_hosts,
                          const std::string& hosts_text, const PartName& part_name, const std::string& restart_id) {
  PartPlan plan;
  plan.restart_id = restart_id;
  if (!several_hosts) {
    if (!hosts_text.empty()) throw Error(fmt::format("--hosts: this checkpoint ran on one host ({})", old_hosts.front()));
    return plan;
  }
  std::map<std::string, std::string> mapping = parse_host_mapping(hosts_text);
  for (const auto& [from, to] : mapping)
    if (std::find(old_hosts.begin(), old_hosts.end(), from) == old_hosts.end())
      throw Error(fmt::format("--hosts: {} is not a host of this checkpoint (MANIFEST.json lists {})", from,
                              fmt::join(std::set<std::string>(old_hosts.begin(), old_hosts.end()), ", ")));
  auto new_host = [&](size_t i) {
    auto it = mapping.find(old_hosts[i]);
    return it == mapping.end() ? old_hosts[i] : it->second;
  };
  std::map<std::string, std::string> new_addresses;
  for (size_t i = 0; i < old_hosts.size(); i++) new_addresses[old_hosts[i]] = new_host(i);
  restore::note_moved_hosts(new_addresses);
  std::vector<size_t> roots = part_roots(parents, old_hosts);
  size_t mine = roots[root];
  if (part_name.vpid != 0) {
    mine = images.size();
    for (size_t i = 0; i < images.size(); i++)
      if (images[i].process().original_pid == part_name.vpid && roots[i] == i &&
          (part_name.space.empty() || images[i].pid_space() == part_name.space)) {
        if (mine != images.size())  // a name without its pid space, where two spaces have that pid
          throw Error(fmt::format("--part {}: two parts of this checkpoint start at a process {} ({} and {}); "
                                  "name its pid space (VPID@PID_SPACE)", part_name.text(), part_name.vpid,
                                  images[mine].path(), images[i].path()));
        mine = i;
      }
    if (mine == images.size())
      throw Error(fmt::format("--part {}: no part of this checkpoint starts at that process", part_name.text()));
  } else {
    plan.restart_id = new_restart_id();
    for (size_t i = 0; i < images.size(); i++)
      if (roots[i] == i && parents[i] < 0 && i != mine)
        plan.detached.push_back({0, images[i].process().original_pid, new_host(i), restore::part_launcher(images[i]),
                                 images[i].pid_space()});
    if (!is_local_address(new_host(mine)))
      plan.root_elsewhere = {0, images[mine].process().original_pid, new_host(mine), {}, images[mine].pid_space()};
  }
  plan.own_address = new_host(mine);
  plan.old_address = old_hosts[mine];
  const std::vector<OutsideStream> outside_streams = refuse_descriptors_across_parts(images, parents, roots, mine, old_hosts);
  std::vector<image::Image> part, other;
  for (size_t i = 0; i < images.size(); i++) {
    if (roots[i] != mine) {
      // A part whose root's parent is in this one: that parent starts it.
      if (roots[i] == i && parents[i] >= 0 && roots[static_cast<size_t>(parents[i])] == mine)
        plan.remote_children[images[static_cast<size_t>(parents[i])].process().original_pid].push_back(
            {other.size(), images[i].process().original_pid, new_host(i), {}, images[i].pid_space()});
      other.push_back(std::move(images[i]));
      continue;
    }
    for (const auto& outside : outside_streams)
      if (outside.image == i) images[i].treat_as_outside(outside.fd, outside.restart_fd);
    part.push_back(std::move(images[i]));
  }
  images = std::move(part);
  plan.others = std::move(other);
  // A process started on another host through a remote launcher took its standard streams as
  // outside ones; where they are objects of this part shared by inode (a pipe), they become ends
  // of those again.
  std::map<std::pair<uint64_t, uint64_t>, StasisFdRecord> shared_here;
  for (const auto& img : images)
    for (const auto& f : img.fds())
      if (restore::shared_by_inode(f)) shared_here.emplace(std::pair{f.dev, f.ino}, f);
  for (const auto& [parent, children] : plan.remote_children)
    for (const RemotePart& child : children)
      for (int stdio = 0; stdio <= 2; stdio++) {
        image::Image& img = plan.others[child.index];
        auto f = std::find_if(img.fds().begin(), img.fds().end(), [&](const auto& r) { return r.fd == stdio; });
        if (f == img.fds().end() || !restore::from_outside(*f)) continue;
        if (auto end = shared_here.find({f->dev, f->ino}); end != shared_here.end()) img.treat_as_end_of(stdio, end->second);
      }
  return plan;
}

// The parts no restarted process starts, and this restart's own if it belongs elsewhere.
void PartStarter::start_other_parts(const PartPlan& plan) const {
  for (const auto& part : plan.detached) {
    pid_t middle = fork();
    if (middle < 0) throw Error("cannot fork to start a part of the restart");
    if (middle == 0) {
      if (fork() == 0) exec_part(part.name(), part.host, part.launcher);
      _exit(0);
    }
    waitpid(middle, nullptr, 0);
  }
  if (plan.root_elsewhere.vpid) exec_part(plan.root_elsewhere.name(), plan.root_elsewhere.host);
}

namespace {
// The standard streams `img` saved, made this process's own; an outside one stays what this
// restart has there.
void take_standard_streams_of(const image::Image& img, const std::map<restore::DescriptionKey, int>& shared) {
  for (const auto& f : img.fds())
    if (f.fd <= 2 && !restore::from_outside(f)) {
      auto it = shared.find({f.owner_pid, f.owner_fd});
      int source = it != shared.end() ? it->second : restore::open_description(img, f);
      if (source != f.fd) dup2(source, f.fd);
    }
}
}  // namespace

void PartStarter::exec_child_part(const image::Image& img, const std::map<restore::DescriptionKey, int>& shared,
                                  const RemotePart& part) const {
  take_standard_streams_of(img, shared);
  exec_part(part.name(), part.host);
}

void PartStarter::exec_srun_step(const image::Image& parent, const std::map<restore::DescriptionKey, int>& shared,
                                 const SrunStep& step) const {
  try {
    take_standard_streams_of(parent, shared);
    close_range(3, ~0U, 0);  // srun holds no end of what the restarted processes share
    // What this srun's tasks say of it when they join again (plugins/launchers/slurm_tasks.cc),
    // as the srun it replaces told its tasks: this process will be srun, its parent the process
    // that ran it.
    ::setenv("STASIS_SRUN", fmt::format("{}:{}:{}:{}", getpid(), getppid(), step.vpid, step.parent_vpid).c_str(), 1);
    // srun as its parent's shell would start it: nothing of this restart's signal settings.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    exec_srun_relaunch(step.plan, step.restart_args, step.checkpoint_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "stasis restart: cannot start a job step for srun (process {}): {}\n", step.vpid, e.what());
  }
  _exit(127);
}

void PartStarter::exec_part(const PartName& part, const std::string& host, const std::vector<std::string>& launcher) const {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, "restart", "--part", part.text(), "--restart-id", restart_id,
                                   "--coord", coord};
  if (!hosts_text.empty()) args.insert(args.end(), {"--hosts", hosts_text});
  for (const auto& assignment : setenv) args.insert(args.end(), {"--setenv", assignment});
  args.insert(args.end(), {"--clock", clock_continue ? "continue" : "elapsed"});
  const CommandEnvironment env = CommandEnvironment::read();
  std::string rsh = !this->rsh.empty() ? this->rsh : !env.rsh.empty() ? env.rsh : "ssh";
  args.insert(args.end(), {"--rsh", rsh, checkpoint_dir});
  std::vector<std::string> words;
  bool rsh_given = !this->rsh.empty() || !env.rsh.empty();
  if (is_local_address(host)) {
    words = args;
  } else if (!rsh_given && !launcher.empty()) {
    words = launcher;  // as the original was started (an ssh session's user, port, options)
  } else {
    for (size_t at = 0; at < rsh.size();) {
      size_t space = rsh.find(' ', at);
      if (space == std::string::npos) space = rsh.size();
      if (space > at) words.push_back(rsh.substr(at, space - at));
      at = space + 1;
    }
  }
  if (!is_local_address(host)) {
    std::string command = "exec env";
    if (!env.runtime_dir.empty()) command += " STASIS_RUNTIME_DIR=" + shell_quote(env.runtime_dir);
    if (!env.ib.empty()) command += " STASIS_IB=" + shell_quote(env.ib);
    for (const auto& arg : args) command += " " + shell_quote(arg);
    words.push_back(host);
    words.push_back(command);
  }
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fmt::print(stderr, "stasis restart: cannot run {} to restart process {} on {}: {}\n", words[0], part.text(), host,
             std::strerror(errno));
  _exit(127);
}

}  // namespace stasis::restart
