#include "restart/process_restore.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "common/error.h"
#include "protocol/wire.h"
#include "restart/loader_feed.h"

namespace fs = std::filesystem;

namespace stasis::restart {
namespace {

int lowest_free_number(const std::set<int>& taken) {
  for (int n = 3;; n++)
    if (!taken.count(n) && n != STASIS_COORDINATOR_FD) return n;
}

// Moves `fd` to number `target` (which nothing else holds), without close-on-exec: the loader
// inherits it.
void place_descriptor(int fd, int target) {
  if (fd != target) {
    if (dup2(fd, target) < 0) throw Error(fmt::format("cannot place a restart descriptor at {}", target));
    close(fd);
  }
  fcntl(target, F_SETFD, 0);
}

// Closes every descriptor below `floor` that is not in `keep` (those at or above it are restart's
// own: shared descriptions and pipes made for the program, all close-on-exec).
void close_all_except(const std::set<int>& keep, int floor) {
  std::vector<int> open_fds;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(entry.path().filename().string());
    open_fds.push_back(fd);
  }
  for (int fd : open_fds)
    if (!keep.count(fd) && fd < floor) close(fd);
}

}  // namespace

void report_restart_failure(const RestoreContext& context, const std::string& message) {
  std::string line = fmt::format("stasis restart: {}\n", message);
  int fd = context.restart_stderr >= 0 ? context.restart_stderr : 2;
  if (write(fd, line.data(), line.size()) < 0) {
    // nowhere left to say it: the exit status still says the restart failed
  }
}

void pack_setenv_entries(const std::vector<std::string>& assignments, char (&entries)[STASIS_MAX_SETENV_BYTES]) {
  auto name_of = [](const std::string& assignment) {
    size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
      throw Error(fmt::format("--setenv {}: expected NAME=VALUE", assignment));
    return assignment.substr(0, equals);
  };
  size_t used = 0;
  for (size_t i = 0; i < assignments.size(); i++) {
    const std::string& assignment = assignments[i];
    const std::string name = name_of(assignment);
    if (std::any_of(assignments.begin() + i + 1, assignments.end(), [&](const auto& later) { return name_of(later) == name; }))
      continue;
    if (used + assignment.size() + 2 > sizeof entries)
      throw Error(fmt::format("--setenv: the assignments exceed {} bytes in all", sizeof entries - 1));
    memcpy(entries + used, assignment.c_str(), assignment.size() + 1);
    used += assignment.size() + 1;
  }
  entries[used] = '\0';
}

std::map<restore::DescriptionKey, int> create_shared_descriptions(const std::vector<image::Image>& images,
                                                                  const PartPlan& parts) {
  std::map<restore::DescriptionKey, int> shared;
  // The part's processes, and the standard streams of the parts they start on other hosts.
  std::vector<std::pair<const image::Image*, int>> holders_of;  // image, highest descriptor counted
  for (const auto& img : images) holders_of.push_back({&img, INT32_MAX});
  for (const auto& [parent, children] : parts.remote_children)
    for (const auto& child : children) holders_of.push_back({&parts.others[child.index], 2});
  std::map<restore::DescriptionKey, std::set<size_t>> holders;
  std::map<std::pair<uint64_t, uint64_t>, std::set<size_t>> inode_holders;
  for (size_t i = 0; i < holders_of.size(); i++)
    for (const auto& f : holders_of[i].first->fds()) {
      if (restore::from_outside(f) || f.fd > holders_of[i].second) continue;
      holders[{f.owner_pid, f.owner_fd}].insert(i);
      if (restore::shared_by_inode(f)) inode_holders[{f.dev, f.ino}].insert(i);
    }
  // An object several processes hold by inode (a pipe) is made once; every end with saved bytes
  // refills it, any end creates it.
  for (const auto& [img, highest] : holders_of)
    for (const auto& f : img->fds())
      if (restore::shared_by_inode(f) && f.fd <= highest && inode_holders[{f.dev, f.ino}].size() > 1)
        restore::make_shared_object(*img, f);
  for (const auto& [key, who] : holders) {
    if (who.size() < 2) continue;
    // The owner's own record when the owner is among them, else any holder's.
    const image::Image* from = holders_of[*who.begin()].first;
    for (size_t i : who)
      if (static_cast<int32_t>(holders_of[i].first->process().original_pid) == key.first) from = holders_of[i].first;
    for (const auto& f : from->fds())
      if (f.owner_pid == key.first && f.owner_fd == key.second && f.same_description_as < 0) {
        shared[key] = restore::open_description(*from, f);
        break;
      }
  }
  return shared;
}

void restore_process(const RestoreContext& context, const image::Image& img, const std::vector<image::Image>& ancestors) {
  // Descriptor 2 is about to become the program's: what the restore steps print (warnings)
  // goes to `stasis restart`'s own stderr instead.
  if (context.restart_stderr >= 0 && context.restart_stderr != 2)
    if (FILE* own = fdopen(context.restart_stderr, "w")) setvbuf(own, nullptr, _IONBF, 0), stderr = own;
  StasisRestartInfo info = context.info;
  for (const auto& f : img.fds()) {
    if (f.fd < 0 || f.fd >= 1024) continue;
    if (f.cloexec) info.cloexec_fds[f.fd / 64] |= 1ull << (f.fd % 64);
    if (restore::from_outside(f)) info.external_fds[f.fd / 64] |= 1ull << (f.fd % 64);
  }
  // Each kind's step in this process, before the feeder (what the loader needs: new object ids,
  // descriptors of shared memory): the process-wide kinds, then the descriptor kinds.
  restore::ProcessRestore process{info, context.floor, {}};
  restore::enter_process_wide(img, context.shared, process);
  restore::enter_process(img, info);

  // Descriptor numbers the loader will find its feed and the image at: free in the program.
  std::set<int> saved = context.keep_fds;
  for (const auto& f : img.fds()) {
    if (context.keep_fds.count(f.fd))
      throw Error(fmt::format("descriptor {} of the program is where the MPI launcher's connection is now", f.fd));
    saved.insert(f.fd);
  }
  const int feed_fd = lowest_free_number(saved);
  saved.insert(feed_fd);
  const int image_fd = lowest_free_number(saved);
  saved.insert(image_fd);
  const int restart_stderr_fd = lowest_free_number(saved);  // the loader and runtime report failures there
  info.restart_stderr_fd = context.restart_stderr >= 0 ? restart_stderr_fd : 0;
  int image = open(img.path().c_str(), O_RDONLY | O_CLOEXEC);
  if (image < 0) throw Error(fmt::format("cannot open {}: {}", img.path(), std::strerror(errno)));

  const std::map<uint64_t, int>& objects = process.loader_objects;
  const AncestorFds ancestor_fds = open_ancestors_for_loader(ancestors, context.floor);
  const auto vdso_plan_of = context.vdso_plans.find(img.path());
  if (vdso_plan_of == context.vdso_plans.end())
    throw Error(fmt::format("internal error: {} was never checked for this kernel's vdso", img.path()));
  const StasisVdsoProxy& vdso_plan = vdso_plan_of->second;
  int feed[2];
  if (pipe2(feed, O_CLOEXEC) != 0) throw Error("cannot create the restart pipe");
  fcntl(feed[0], F_SETPIPE_SZ, 1 << 20);
  pid_t child = fork();
  if (child < 0) throw Error("cannot fork the image feeder");
  if (child == 0) {
    if (fork() != 0) _exit(0);  // the grandchild feeds; init adopts it
    close(feed[0]);
    try {
      feed_loader(img, ancestor_fds, objects, info, vdso_plan, image_fd, context.payloads_verified, feed[1]);
    } catch (const std::exception& e) {
      report_restart_failure(context, e.what());
      _exit(1);
    }
    _exit(0);
  }
  close(feed[1]);
  int status = 0;
  waitpid(child, &status, 0);

  // From here on this process becomes the restarted program.
  const StasisProcessRecord& proc = img.process();
  // Out of the way of every number they may have to move to, then into place.
  int feed_out_of_way = fcntl(feed[0], F_DUPFD, 600), image_out_of_way = fcntl(image, F_DUPFD, 600);
  if (feed_out_of_way < 0 || image_out_of_way < 0 || feed_out_of_way == image_fd ||
      image_out_of_way == feed_fd)
    throw Error("cannot set up the restart descriptors");
  std::set<int> keep = {0, 1, 2, feed_out_of_way, image_out_of_way, STASIS_PID_TABLE_FD, context.restart_stderr};
  for (int fd : context.keep_fds) keep.insert(fd), fcntl(fd, F_SETFD, 0);
  for (const auto& f : img.fds())
    if (restore::from_outside(f)) keep.insert(f.fd);
  close_all_except(keep, context.floor);
  place_descriptor(feed_out_of_way, feed_fd);
  place_descriptor(image_out_of_way, image_fd);
  if (info.restart_stderr_fd > 0) {  // a copy: the engine still reports through context.restart_stderr
    if (dup2(context.restart_stderr, restart_stderr_fd) < 0) throw Error("cannot keep restart's stderr for the loader");
  }
  restore::place_descriptors(img, context.shared_descriptions);
  if (chdir(proc.cwd) != 0) throw Error(fmt::format("cannot enter {}", proc.cwd));
  umask(proc.umask);
  // The runtime's coordinator connection, made before the program's limits may forbid it.
  int coordinator_socket = stasis_tcp_socket_for(context.info.coord_host);
  if (coordinator_socket < 0 || dup2(coordinator_socket, STASIS_COORDINATOR_FD) < 0)
    throw Error("cannot make the restarted process's coordinator descriptor");
  close(coordinator_socket);
  for (int r = 0; r < 16; r++) {
    struct rlimit lim = {proc.rlimits[r].cur, proc.rlimits[r].max};
    setrlimit(r, &lim);  // best effort: raising a hard limit needs privilege
  }
  fcntl(STASIS_PID_TABLE_FD, F_SETFD, 0);  // every process of the computation inherits it
  std::string fd_text = std::to_string(feed_fd);
  std::string stderr_text = std::to_string(info.restart_stderr_fd > 0 ? info.restart_stderr_fd : 2);
  char* argv[] = {const_cast<char*>("stasis-loader"), fd_text.data(), stderr_text.data(), nullptr};
  char* envp[] = {nullptr};
  execve(context.loader.c_str(), argv, envp);
  throw Error(fmt::format("cannot execute the restart loader {}: {}", context.loader, std::strerror(errno)));
}

}  // namespace stasis::restart
