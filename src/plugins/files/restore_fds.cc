// Descriptors at restart: one open file description per saved description, at every number that
// held it. Plain files, directories and devices are here; other kinds dispatch to their files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "common/error.h"
#include "plugins/files/restore.h"

namespace fs = std::filesystem;

namespace stasis::restore {

namespace {
int g_descriptor_floor = 3;
}
int open_description_anywhere(const image::Image& img, const StasisFdRecord& rec);

void set_descriptor_floor(int floor) { g_descriptor_floor = std::max(floor, 3); }

int lift_descriptor(int fd) {
  if (fd < 0 || fd >= g_descriptor_floor) return fd;
  int lifted = fcntl(fd, F_DUPFD_CLOEXEC, g_descriptor_floor);
  if (lifted < 0) throw Error(fmt::format("cannot move a restart descriptor above {}: {}", g_descriptor_floor,
                                          std::strerror(errno)));
  close(fd);
  return lifted;
}

void check_descriptor(const image::Image& img, const StasisFdRecord& rec) {
  switch (rec.kind) {
    case STASIS_FD_REGULAR:
    case STASIS_FD_DIRECTORY:
    case STASIS_FD_CHARDEV:
    case STASIS_FD_FIFO:
      if (!fs::exists(rec.path))
        throw Error(fmt::format("{} (descriptor {} of the program) is gone; restore it to restart",
                                rec.path, rec.fd));
      return;
    case STASIS_FD_EXTERNAL:
    case STASIS_FD_PIPE:
    case STASIS_FD_UNIX_SOCKET:
    case STASIS_FD_UNIX_LISTENER:
    case STASIS_FD_TCP_LISTENER:
    case STASIS_FD_TCP_CONNECTION:
    case STASIS_FD_UDP_SOCKET:
    case STASIS_FD_UNIX_DATAGRAM:
      return;
    case STASIS_FD_EVENTFD:
    case STASIS_FD_EPOLL:
    case STASIS_FD_SIGNALFD:
    case STASIS_FD_TIMERFD:
    case STASIS_FD_INOTIFY:
      check_event_fd(img, rec);
      return;
    case STASIS_FD_SAVED_FILE:
      check_saved_file(img, rec);
      return;
    case STASIS_FD_MQUEUE:  // re-created by open_mqueue
    case STASIS_FD_PTY_MASTER:  // checked with the other processes' ends by create_ptys
    case STASIS_FD_PTY_SLAVE:
      return;
    default:
      throw Error(fmt::format("{}: descriptor {} has kind {} ({}), which this build cannot restore",
                              img.path(), rec.fd, rec.kind, image::fd_kind_name(rec.kind)));
  }
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
    // Output the killed run wrote after the checkpoint is discarded, as the restarted program
    // will write it again: the file ends up as an uninterrupted run leaves it.
    if (mode != O_RDONLY && appending && static_cast<uint64_t>(st.st_size) > f.size) {
      if (ftruncate(fd, static_cast<off_t>(f.size)) != 0)
        throw Error(fmt::format("cannot cut {} back to its size at the checkpoint", f.path));
    } else if (f.kind == STASIS_FD_REGULAR) {
      warn_if_changed(f, st);
    }
  }
  if (file || f.kind == STASIS_FD_DIRECTORY) lseek(fd, f.offset, SEEK_SET);
  return fd;
}

int open_description(const image::Image& img, const StasisFdRecord& rec) {
  return lift_descriptor(open_description_anywhere(img, rec));
}

int open_description_anywhere(const image::Image& img, const StasisFdRecord& rec) {
  switch (rec.kind) {
    case STASIS_FD_REGULAR:
    case STASIS_FD_DIRECTORY:
    case STASIS_FD_CHARDEV:
      return open_regular_file(img, rec);
    case STASIS_FD_PIPE:
    case STASIS_FD_FIFO:
      return open_pipe_end(img, rec);
    case STASIS_FD_UNIX_SOCKET:
      return open_socket_end(img, rec);
    case STASIS_FD_UNIX_LISTENER:
      return open_unix_listener(img, rec);
    case STASIS_FD_TCP_LISTENER:
    case STASIS_FD_TCP_CONNECTION:
      return open_tcp_socket(img, rec);
    case STASIS_FD_UDP_SOCKET:
    case STASIS_FD_UNIX_DATAGRAM:
      return open_datagram_socket(img, rec);
    case STASIS_FD_EVENTFD:
    case STASIS_FD_EPOLL:
    case STASIS_FD_SIGNALFD:
    case STASIS_FD_TIMERFD:
    case STASIS_FD_INOTIFY:
      return open_event_fd(img, rec);
    case STASIS_FD_SAVED_FILE:
      return open_saved_file(img, rec);
    case STASIS_FD_MQUEUE:
      return open_mqueue(img, rec);
    case STASIS_FD_PTY_MASTER:
    case STASIS_FD_PTY_SLAVE:
      return open_pty(img, rec);
    default:
      check_descriptor(img, rec);  // throws with the kind's message
      throw Error(fmt::format("descriptor {} cannot be restored", rec.fd));
  }
}

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
    int from = f.kind == STASIS_FD_EXTERNAL && f.kind_data[0] ? static_cast<int>(f.kind_data[0]) - 1 : -1;
    if (from >= 0 && from != f.fd && !outside.count(from))
      outside[from] = fcntl(from, F_GETFD) < 0 ? -1 : lift_descriptor(fcntl(from, F_DUPFD_CLOEXEC, 0));
  }
  for (int stdio = 0; stdio <= 2; stdio++)
    if (!saved.count(stdio)) close(stdio);
  for (const auto& f : img.fds()) {  // ascending descriptor numbers
    if (f.kind == STASIS_FD_EXTERNAL) {
      int from = f.kind_data[0] ? static_cast<int>(f.kind_data[0]) - 1 : f.fd;
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
  finish_event_fds(img);
  for (const auto& f : img.fds()) fcntl(f.fd, F_SETFD, 0);  // the runtime sets FD_CLOEXEC again
}

}  // namespace stasis::restore
