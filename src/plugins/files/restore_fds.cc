// Descriptors at restart: one open file description per saved description, at every number that
// held it. Plain files, directories, devices and the outside's descriptors are here; other kinds
// are in their folders, found through the restore table (restore_table.cc).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <set>
#include <string_view>

#include "common/error.h"
#include <nlohmann/json.hpp>

#include "plugins/files/records.h"
#include "plugins/files/restore.h"

namespace fs = std::filesystem;

namespace stasis::restore {

namespace {
int g_descriptor_floor = 3;
}

void set_descriptor_floor(int floor) { g_descriptor_floor = std::max(floor, 3); }

int lift_descriptor(int fd) {
  if (fd < 0 || fd >= g_descriptor_floor) return fd;
  int lifted = fcntl(fd, F_DUPFD_CLOEXEC, g_descriptor_floor);
  if (lifted < 0) throw Error(fmt::format("cannot move a restart descriptor above {}: {}", g_descriptor_floor,
                                          std::strerror(errno)));
  close(fd);
  return lifted;
}

void check_path_exists(const image::Image&, const StasisFdRecord& rec) {
  if (!fs::exists(rec.path))
    throw Error(fmt::format("{} (descriptor {} of the program) is gone; restore it to restart", rec.path, rec.fd));
}

namespace {
// The program goes on with the file as it is now: say so when that is not how it was.
void warn_if_changed(const StasisFdRecord& f, const struct stat& st) {
  const int64_t mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  if (static_cast<uint64_t>(st.st_size) == f.size && mtime_ns == f.mtime_ns) return;
  const std::string change =
      static_cast<uint64_t>(st.st_size) == f.size
          ? std::string("modified, same size")
          : fmt::format("{} bytes at the checkpoint, {} now", f.size, static_cast<uint64_t>(st.st_size));
  fmt::print(stderr, "stasis restart: warning: {} (descriptor {}) changed since the checkpoint ({}); "
             "the program goes on with it as it is now\n", f.path, f.fd, change);
}

// Why the bytes after a regular file's size at the checkpoint may not all be the computation's
// (empty: they are, as far as the checkpoint could see; README.md, Output files).
std::string why_maybe_not_the_computations(const StasisFdRecord& f) {
  const auto seen = kind_data_of<RegularFileData>(f);
  if (seen.checked != kOutsideWritersChecked)
    return "the checkpoint did not record whether other processes wrote to it (an image from an older Stasis)";
  if (seen.outside_writer) return "a process outside the computation had it open for writing at the checkpoint";
  return "";
}
}  // namespace

int open_regular_file(const image::Image&, const StasisFdRecord& f) {
  int flags = static_cast<int>(f.flags) & ~(O_CREAT | O_TRUNC | O_EXCL | O_NOCTTY);
  if (f.kind == STASIS_FD_DIRECTORY) flags |= O_DIRECTORY;
  int fd = open(f.path, flags | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("cannot reopen {} as descriptor {}: {}", f.path, f.fd, std::strerror(errno)));
  // A saved file (launch --save-files) has its checkpoint contents back already.
  const bool file = f.kind == STASIS_FD_REGULAR || f.kind == STASIS_FD_SAVED_FILE;
  if (file) {
    struct stat st;
    fstat(fd, &st);
    int mode = f.flags & O_ACCMODE;
    bool appending = (f.flags & O_APPEND) || static_cast<uint64_t>(f.offset) == f.size;
    const uint64_t after = static_cast<uint64_t>(st.st_size) > f.size ? st.st_size - f.size : 0;
    const std::string not_only_ours = f.kind == STASIS_FD_REGULAR ? why_maybe_not_the_computations(f) : "";
    if (mode != O_RDONLY && appending && after && !not_only_ours.empty()) {
      // Never destroy what someone else may have written: appended to, or refused.
      if (!(f.flags & O_APPEND)) {
        close(fd);
        throw Error(fmt::format(
            "{} (descriptor {}) has {} bytes after its size at the checkpoint ({}) that the restarted "
            "program would write over, and {}; move them aside, or, if they are the program's own "
            "output, cut the file to {} bytes (truncate -s {} {}) and restart again",
            f.path, f.fd, after, f.size, not_only_ours, f.size, f.size, f.path));
      }
      fmt::print(stderr, "stasis restart: warning: {} (descriptor {}) has {} bytes after its size at the "
                 "checkpoint and {}: they are kept, and the program appends after them\n",
                 f.path, f.fd, after, not_only_ours);
    } else if (mode != O_RDONLY && appending && after) {
      // Output the killed run wrote after the checkpoint is discarded, as the restarted program
      // will write it again: the file ends up as an uninterrupted run leaves it.
      if (ftruncate(fd, static_cast<off_t>(f.size)) != 0)
        throw Error(fmt::format("cannot cut {} back to its size at the checkpoint", f.path));
    } else if (f.kind == STASIS_FD_REGULAR || reopened_as_found(f)) {
      warn_if_changed(f, st);
    }
  }
  if (file || f.kind == STASIS_FD_DIRECTORY) lseek(fd, f.offset, SEEK_SET);
  return fd;
}

void describe_external(const image::Image&, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto outside = kind_data_of<StasisExternalData>(rec);
  state["restart_connects_its_descriptor"] =
      outside.launch_fd_plus_one ? static_cast<int>(outside.launch_fd_plus_one) - 1 : rec.fd;
  if (is_outside_regular_file(rec)) state["regular_file_shared_with_outside"] = true;  // else appended to
}

namespace {
// A regular file the computation shared with a process outside it (`./job.sh > log`): never cut.
// Restart's own descriptor at the launch's number when it is the same file (the job's, when the
// job runs `stasis restart`: both write through one description again), else the file appended to.
void place_outside_file(const StasisFdRecord& f, const std::map<int, int>& outside) {
  if (f.same_description_as >= 0) {  // 2>&1: what descriptor 1 became
    if (dup2(f.same_description_as, f.fd) < 0)
      throw Error(fmt::format("cannot place descriptor {} ({}): {}", f.fd, f.path, std::strerror(errno)));
    return;
  }
  const int from = static_cast<int>(kind_data_of<OutsideFileData>(f).launch_fd_plus_one) - 1;
  const auto copied = outside.find(from);
  const int restarts = from == f.fd ? (fcntl(f.fd, F_GETFD) < 0 ? -1 : f.fd) : copied != outside.end() ? copied->second : -1;
  struct stat st;
  if (restarts >= 0 && fstat(restarts, &st) == 0 && st.st_dev == f.dev && st.st_ino == f.ino &&
      (fcntl(restarts, F_GETFL) & O_ACCMODE) != O_RDONLY) {
    if (restarts != f.fd && dup2(restarts, f.fd) < 0)
      throw Error(fmt::format("cannot place descriptor {} ({}): {}", f.fd, f.path, std::strerror(errno)));
    return;
  }
  const int flags = (static_cast<int>(f.flags) & ~(O_CREAT | O_TRUNC | O_EXCL | O_NOCTTY)) | O_APPEND;
  // Deleted at the checkpoint and restart does not hold it: no path leads to it any more and
  // nobody can read what would be written there, so the program writes to /dev/null.
  const bool deleted = std::string_view(f.path).ends_with(" (deleted)");
  int fd = deleted ? open("/dev/null", O_WRONLY | O_CLOEXEC) : open(f.path, flags | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("cannot reopen {} to append to it as descriptor {}: {}", f.path, f.fd, std::strerror(errno)));
  if (fd != f.fd) {
    if (dup2(fd, f.fd) < 0)
      throw Error(fmt::format("cannot place descriptor {} ({}): {}", f.fd, f.path, std::strerror(errno)));
    close(fd);
  }
}
}  // namespace

void place_descriptors(const image::Image& img, const std::map<DescriptionKey, int>& shared) {
  std::set<int> saved;
  for (const auto& f : img.fds()) saved.insert(f.fd);
  if (!saved.empty() && *saved.rbegin() >= g_descriptor_floor)
    throw Error(fmt::format("internal error: descriptor floor {} is below saved descriptor {}",
                            g_descriptor_floor, *saved.rbegin()));
  // A descriptor on the outside world gets what `stasis restart` has at the number the outside
  // file had at launch (3>&1 makes 3 a copy of 1): copied aside first, before anything is placed.
  std::map<int, int> outside;  // restart's number -> a copy of it (or -1: restart has none)
  for (const auto& f : img.fds()) {
    const uint64_t launch_fd_plus_one = kind_data_of<StasisExternalData>(f).launch_fd_plus_one;
    int from = f.kind == STASIS_FD_EXTERNAL && launch_fd_plus_one ? static_cast<int>(launch_fd_plus_one) - 1 : -1;
    if (from >= 0 && from != f.fd && !outside.count(from))
      outside[from] = fcntl(from, F_GETFD) < 0 ? -1 : lift_descriptor(fcntl(from, F_DUPFD_CLOEXEC, 0));
  }
  for (int stdio = 0; stdio <= 2; stdio++)
    if (!saved.count(stdio)) close(stdio);
  for (const auto& f : img.fds()) {  // ascending descriptor numbers
    if (is_outside_regular_file(f)) {
      place_outside_file(f, outside);
      continue;
    }
    if (f.kind == STASIS_FD_EXTERNAL) {
      const uint64_t launch_fd_plus_one = kind_data_of<StasisExternalData>(f).launch_fd_plus_one;
      int from = launch_fd_plus_one ? static_cast<int>(launch_fd_plus_one) - 1 : f.fd;
      int copy = from == f.fd ? (fcntl(f.fd, F_GETFD) < 0 ? -1 : f.fd) : outside[from];
      if (copy < 0) {  // restart has nothing there: give it /dev/null
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd != f.fd) dup2(null_fd, f.fd), close(null_fd);
      } else if (copy != f.fd) {
        dup2(copy, f.fd);
      }
      continue;
    }
    int source = -1;
    bool owned = false;
    if (f.same_description_as >= 0) {
      source = f.same_description_as;
    } else if (auto it = shared.find({f.owner_pid, f.owner_fd}); it != shared.end()) {
      source = it->second;
    } else {
      source = open_description(img, f);
      owned = true;
    }
    if (source != f.fd) {
      if (dup2(source, f.fd) < 0)
        throw Error(fmt::format("cannot place descriptor {} ({}): {}", f.fd, f.path, std::strerror(errno)));
      if (owned) close(source);
    }
  }
  finish_descriptors(img);
  for (const auto& f : img.fds()) fcntl(f.fd, F_SETFD, 0);  // the runtime sets FD_CLOEXEC again
}

}  // namespace stasis::restore
