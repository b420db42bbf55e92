// Files: open descriptors. Regular files and directories are reopened by path at their saved
// offset; character devices like /dev/null by path; standard streams connected to something
// outside the computation (terminal, pipe, socket) are reconnected to those of `stasis restart`.
// Other kinds go to their own capture function (files.h); what none takes is refused with a
// message naming the descriptor and its kind.
#include "plugins/files/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace stasis::rt {
namespace {

const char* kind_of_link(const char* link) {
  if (str_starts(link, "pipe:")) return "a pipe";
  if (str_starts(link, "socket:")) return "a socket";
  if (str_starts(link, "anon_inode:[eventfd")) return "an eventfd";
  if (str_starts(link, "anon_inode:[eventpoll")) return "an epoll instance";
  if (str_starts(link, "anon_inode:[signalfd")) return "a signalfd";
  if (str_starts(link, "anon_inode:[timerfd")) return "a timerfd";
  if (str_starts(link, "anon_inode:inotify")) return "an inotify instance";
  if (str_starts(link, "anon_inode:")) return "an anonymous-inode descriptor";
  if (str_starts(link, "/memfd:")) return "a memfd";
  if (str_starts(link, "/dev/pts/") || str_starts(link, "/dev/tty") || str_eq(link, "/dev/ptmx"))
    return "a terminal";
  return "an unsupported kind of file";
}

bool restorable_chardev(const char* path) {
  static const char* const kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                         "/dev/urandom"};
  for (const char* d : kDevices)
    if (str_eq(path, d)) return true;
  return false;
}

constexpr int kMaxInherited = 1024;
uint64_t g_inherited_ino[kMaxInherited];  // inode of each descriptor present at launch, 0 = none

// What the launched process inherited from outside, for the processes it starts: inodes, as a
// child may hold them at other numbers (STASIS_EXTERNAL_INODES in the environment).
constexpr int kMaxExternal = 64;
uint64_t g_external_inodes[kMaxExternal];
int g_external_count = 0;

bool inherited_unchanged(int fd, const struct stat& st) {
  if (fd < kMaxInherited && g_inherited_ino[fd] != 0 && g_inherited_ino[fd] == st.st_ino) return true;
  for (int i = 0; i < g_external_count; i++)
    if (g_external_inodes[i] == st.st_ino) return true;
  return pid_table_external_inode(st.st_ino);
}

long parent_of(long pid) {
  char path[48] = "/proc/";
  format_uint(path + 6, static_cast<unsigned long>(pid));
  str_copy(path + str_len(path), "/stat", 8);
  char stat[512];
  if (read_small_file(path, stat, sizeof stat) <= 0) return 0;
  const char* p = nullptr;
  for (const char* c = stat; *c; c++)
    if (*c == ')') p = c;
  if (!p || !p[1] || !p[2]) return 0;
  p += 4;  // ") S "
  long ppid = 0;
  while (*p >= '0' && *p <= '9') ppid = ppid * 10 + (*p++ - '0');
  return ppid;
}

// The lowest descriptor of process `other` holding the same open file description as our `fd`,
// or -1.
int shared_fd_in(long other, long self, int fd, const struct stat& st) {
  char dir_path[48] = "/proc/";
  format_uint(dir_path + 6, static_cast<unsigned long>(other));
  str_copy(dir_path + str_len(dir_path), "/fd", 8);
  long dir = STASIS_SYS3(SYS_open, dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return -1;
  alignas(8) char buf[2048];
  int best = -1;
  for (long got; (got = STASIS_SYS3(SYS_getdents64, dir, buf, sizeof buf)) > 0;) {
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int their = 0;
      for (const char* p = d->d_name; *p; p++) their = their * 10 + (*p - '0');
      if (best >= 0 && their > best) continue;
      struct stat their_st;
      if (STASIS_SYS4(SYS_newfstatat, dir, d->d_name, &their_st, 0) != 0) continue;
      if (their_st.st_ino != st.st_ino || their_st.st_dev != st.st_dev) continue;
      if (STASIS_SYS5(SYS_kcmp, other, self, 0 /* KCMP_FILE */, their, fd) == 0) best = their;
    }
  }
  STASIS_SYS1(SYS_close, dir);
  return best;
}

// A description inherited across fork is shared with the parent (and maybe further up): its
// owner is the topmost ancestor still holding it, so every holder names the same one.
void find_owner_among_ancestors(long self, int fd, const struct stat& st, int32_t* owner_pid,
                                int32_t* owner_fd) {
  for (long ancestor = STASIS_SYS0(SYS_getppid); ancestor > 1; ancestor = parent_of(ancestor)) {
    int theirs = shared_fd_in(ancestor, self, fd, st);
    if (theirs < 0) return;
    *owner_pid = static_cast<int32_t>(virtual_pid_of(ancestor));
    *owner_fd = theirs;
  }
}

}  // namespace

void note_external_fds_from_env() {
  g_external_count = 0;
  const char* list = getenv("STASIS_EXTERNAL_INODES");
  uint64_t v = 0;
  for (const char* p = list; p && g_external_count < kMaxExternal; p++) {
    if (*p >= '0' && *p <= '9') {
      v = v * 10 + static_cast<uint64_t>(*p - '0');
      continue;
    }
    if (v) g_external_inodes[g_external_count++] = v;
    v = 0;
    if (!*p) break;
  }
}

void note_inherited_fds(const uint64_t* only) {
  g_external_count = 0;  // after a restart these inodes mean nothing
  for (int fd = 0; fd < kMaxInherited; fd++) {
    g_inherited_ino[fd] = 0;
    if (only && !(only[fd / 64] & (1ull << (fd % 64)))) continue;
    struct stat st;
    if (STASIS_SYS2(SYS_fstat, fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      g_inherited_ino[fd] = st.st_ino ? st.st_ino : 1;
  }
  if (only) return;
  // At launch (before main, single-threaded): tell the processes this one starts.
  static char list[kMaxExternal * 21 + 1];
  size_t n = 0;
  for (int fd = 0; fd < kMaxInherited && n + 22 < sizeof list; fd++)
    if (g_inherited_ino[fd] > 1) {
      if (n) list[n++] = ',';
      format_uint(list + n, g_inherited_ino[fd]);
      n = str_len(list);
    }
  list[n] = 0;
  setenv("STASIS_EXTERNAL_INODES", list, 1);
}

bool FdDataList::init(Arena& arena, uint32_t cap) {
  arena_ = &arena;
  items_ = static_cast<FdDataItem*>(arena.alloc(sizeof(FdDataItem) * cap));
  count_ = 0;
  cap_ = items_ ? cap : 0;
  return items_ != nullptr;
}

bool FdDataList::add_copy(int fd, uint32_t tag, const void* bytes, uint64_t len) {
  void* copy = len ? arena_->alloc(len) : nullptr;
  if (len && !copy) return false;
  if (len) __builtin_memcpy(copy, bytes, len);
  return add_ref(fd, tag, copy, len);
}

bool FdDataList::add_ref(int fd, uint32_t tag, const void* bytes, uint64_t len) {
  if (count_ == cap_) return false;
  items_[count_++] = {fd, tag, bytes, len, -1};
  return true;
}

bool FdDataList::add_file(int fd, uint32_t tag, int source_fd, uint64_t len) {
  if (count_ == cap_) return false;
  items_[count_++] = {fd, tag, nullptr, len, source_fd};
  return true;
}

bool capture_fds(Arena& arena, StasisFdRecord** out, uint32_t* count, FdDataList& data, LogLine& error) {
  long dir = STASIS_SYS3(SYS_open, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) {
    error << "cannot list /proc/self/fd";
    return false;
  }
  constexpr uint32_t kMax = 65536;
  auto* recs = static_cast<StasisFdRecord*>(arena.alloc(sizeof(StasisFdRecord) * 64));
  uint32_t cap = 64, n = 0;
  alignas(8) char buf[4096];
  bool ok = true;
  const long pid = sys_getpid();
  for (;;) {
    long got = STASIS_SYS3(SYS_getdents64, dir, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got && ok; ) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int fd = 0;
      for (const char* p = d->d_name; *p; p++) fd = fd * 10 + (*p - '0');
      if (fd == dir || is_runtime_fd(fd)) continue;
      if (n == cap) {  // grow: the arena only bumps, so copy into a bigger block
        if (cap >= kMax) break;
        auto* bigger = static_cast<StasisFdRecord*>(arena.alloc(sizeof(StasisFdRecord) * cap * 2));
        if (!bigger) { error << "too many descriptors"; ok = false; break; }
        __builtin_memcpy(bigger, recs, sizeof(StasisFdRecord) * cap);
        recs = bigger;
        cap *= 2;
      }
      StasisFdRecord& r = recs[n];
      r = {};
      r.fd = fd;
      char proc_path[48] = "/proc/self/fd/";
      format_uint(proc_path + 14, static_cast<unsigned long>(fd));
      long len = STASIS_SYS3(SYS_readlink, proc_path, r.path, sizeof r.path - 1);
      if (len < 0) continue;  // closed meanwhile
      r.path[len] = 0;
      struct stat st;
      if (STASIS_SYS2(SYS_fstat, fd, &st) != 0) continue;
      r.flags = static_cast<uint32_t>(STASIS_SYS2(SYS_fcntl, fd, F_GETFL));
      r.cloexec = (STASIS_SYS2(SYS_fcntl, fd, F_GETFD) & FD_CLOEXEC) ? 1 : 0;
      r.dev = st.st_dev;
      r.ino = st.st_ino;
      r.size = static_cast<uint64_t>(st.st_size);
      r.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
      r.same_description_as = -1;
      for (uint32_t j = 0; j < n; j++)
        if (recs[j].ino == r.ino && recs[j].dev == r.dev &&
            STASIS_SYS5(SYS_kcmp, pid, pid, 0 /* KCMP_FILE */, recs[j].fd, fd) == 0) {
          r.same_description_as = recs[j].fd;
          break;
        }
      r.owner_pid = static_cast<int32_t>(g_config.original_pid);
      r.owner_fd = fd;
      for (uint32_t j = 0; j < n && r.same_description_as >= 0; j++)
        if (recs[j].fd == r.same_description_as) r.owner_pid = recs[j].owner_pid, r.owner_fd = recs[j].owner_fd;
      if (r.same_description_as < 0) find_owner_among_ancestors(pid, fd, st, &r.owner_pid, &r.owner_fd);
      const bool deleted = str_ends(r.path, " (deleted)");
      const FdProbe probe{fd, r.path, st, deleted};
      int handled = capture_mqueue_fd(probe, r, data, error);  // a queue looks like a regular file
      if (!handled && S_ISREG(st.st_mode) && !deleted && r.path[0] == '/' && !str_starts(r.path, "/memfd:") &&
          !save_files_requested(r.path, r.flags)) {
        r.kind = STASIS_FD_REGULAR;
        r.offset = STASIS_SYS3(SYS_lseek, fd, 0, SEEK_CUR);
        handled = 1;
      } else if (S_ISDIR(st.st_mode) && !deleted) {
        r.kind = STASIS_FD_DIRECTORY;
        r.offset = STASIS_SYS3(SYS_lseek, fd, 0, SEEK_CUR);
        handled = 1;
      } else if (S_ISCHR(st.st_mode) && restorable_chardev(r.path)) {
        r.kind = STASIS_FD_CHARDEV;
        handled = 1;
      } else if (inherited_unchanged(fd, st)) {
        r.kind = STASIS_FD_EXTERNAL;
        handled = 1;
      }
      if (!handled && r.same_description_as >= 0) {  // the first holder captured it
        for (uint32_t j = 0; j < n; j++)
          if (recs[j].fd == r.same_description_as) {
            r.kind = recs[j].kind;
            r.offset = recs[j].offset;
            __builtin_memcpy(r.kind_data, recs[j].kind_data, sizeof r.kind_data);
          }
        handled = 1;
      }
      if (!handled) handled = capture_pipe_fd(probe, r, data, error);
      if (!handled) handled = capture_event_fd(probe, r, data, error);
      if (!handled) handled = capture_saved_file_fd(probe, r, data, error);
      if (handled < 0) {
        ok = false;
        break;
      }
      if (!handled) {
        error << "descriptor " << fd << " is "
              << (deleted ? "a file deleted while open" : kind_of_link(r.path)) << " (" << r.path
              << "), which this version of Stasis cannot restore; not checkpointing";
        ok = false;
        break;
      }
      n++;
    }
    if (!ok) break;
  }
  STASIS_SYS1(SYS_close, dir);
  *out = recs;
  *count = n;
  return ok;
}

}  // namespace stasis::rt
