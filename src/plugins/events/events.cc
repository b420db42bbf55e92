// Event descriptors (checkpoint side): epoll, signalfd, timerfd, inotify (eventfd: ../eventfd). Their state is
// read from /proc/self/fdinfo/N, which the kernel prints for exactly these objects, plus:
//  - timerfd: timerfd_gettime first, which folds expirations the kernel has not yet counted into
//    the `ticks` that fdinfo shows (a read would do the same; nothing is consumed);
//  - epoll: kcmp(KCMP_EPOLL_TFD) proves each interest's descriptor number still holds the file
//    that was added (fdinfo shows the number used at EPOLL_CTL_ADD, which may have been closed or
//    reused since);
//  - inotify: fdinfo gives each watch's wd, inode and mask but not its path, so the thin
//    inotify_* wrappers below record the paths the program passed.
// Restart side: restore_event_fds.cc.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>

#include "plugins/events/events.h"
#include "plugins/events/records.h"

#ifndef TFD_IOC_SET_TICKS  // <linux/timerfd.h> has it, but clashes with <sys/timerfd.h>
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

namespace stasis::rt {
namespace {

// ---- inotify paths, recorded by the wrappers ---------------------------------------------------
// A fixed table (no malloc in a wrapper that may race with a checkpoint). A thread stopped while
// writing an entry leaves it unpublished: the checkpoint then finds no path for that watch and
// refuses, and the next checkpoint succeeds.
constexpr int kMaxRecordedWatches = 4096;
constexpr int kMaxTrackedInotifyFds = 1024;
enum WatchState : uint32_t { kFree = 0, kWriting = 1, kPublished = 2 };

struct RecordedWatch {
  std::atomic<uint32_t> state;
  int32_t fd, wd;
  uint32_t add_flags;
  uint64_t sequence;  // the newest entry for one (fd, wd) wins
  char path[STASIS_IMAGE_PATH_MAX];
};
// constinit: a start-up loop zeroing these 4 MiB would touch every page in every process.
constinit RecordedWatch g_watches[kMaxRecordedWatches];
std::atomic<uint64_t> g_watch_sequence{0};
// The highest wd each inotify descriptor has handed out: the kernel's next wd follows it, even when
// that watch is gone (see restore_event_fds.cc for why it matters).
constinit std::atomic<int32_t> g_last_wd[kMaxTrackedInotifyFds];

constexpr uint32_t kAddOnlyFlags = IN_DONT_FOLLOW | IN_ONLYDIR;

void forget_watches(int fd, int wd_or_all) {
  for (auto& w : g_watches) {
    uint32_t published = kPublished;
    if (w.state.load(std::memory_order_acquire) == kPublished && w.fd == fd &&
        (wd_or_all < 0 || w.wd == wd_or_all))
      w.state.compare_exchange_strong(published, kFree);
  }
}

// Absolute, so a restart from another directory finds it; false if it does not fit.
bool absolute_path(const char* path, char* out, size_t cap) {
  size_t len = 0;
  if (path[0] != '/') {
    long n = STASIS_SYS2(SYS_getcwd, out, cap);
    if (n <= 0) return false;
    len = str_len(out);
    if (len + 1 >= cap) return false;
    if (out[len - 1] != '/') out[len++] = '/';
  }
  size_t rest = str_len(path);
  if (len + rest >= cap) return false;
  __builtin_memcpy(out + len, path, rest + 1);
  return true;
}

void record_watch(int fd, int wd, const char* path, uint32_t mask) {
  if (fd >= 0 && fd < kMaxTrackedInotifyFds) {
    int32_t last = g_last_wd[fd].load();
    while (last < wd && !g_last_wd[fd].compare_exchange_weak(last, wd)) {
    }
  }
  for (auto& w : g_watches) {
    uint32_t expected = kFree;
    if (!w.state.compare_exchange_strong(expected, kWriting)) continue;
    if (!absolute_path(path, w.path, sizeof w.path)) {
      w.state.store(kFree);
      return;  // the checkpoint will refuse this watch, naming it
    }
    w.fd = fd;
    w.wd = wd;
    w.add_flags = mask & kAddOnlyFlags;
    w.sequence = g_watch_sequence.fetch_add(1) + 1;
    w.state.store(kPublished, std::memory_order_release);
    for (auto& old : g_watches) {  // the same watch added again (a new mask, another path)
      uint32_t published = kPublished;
      if (&old != &w && old.state.load(std::memory_order_acquire) == kPublished && old.fd == fd &&
          old.wd == wd && old.sequence < w.sequence)
        old.state.compare_exchange_strong(published, kFree);
    }
    return;
  }
}

int (*g_inotify_init)();
int (*g_inotify_init1)(int);
int (*g_inotify_add_watch)(int, const char*, uint32_t);
int (*g_inotify_rm_watch)(int, int);

int new_inotify_instance(int fd) {
  if (fd >= 0) {
    forget_watches(fd, -1);  // entries of an instance that was closed at this number
    if (fd < kMaxTrackedInotifyFds) g_last_wd[fd].store(0);
  }
  return fd;
}

// ---- reading fdinfo (for_each_fdinfo_line, field, parse_decimal: files.h) -----------------------
uint64_t parse_octal(const char* p) {
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '7'; p++) v = v * 8 + static_cast<uint64_t>(*p - '0');
  return v;
}

uint64_t hex_field(const char* line, const char* name) {
  const char* p = fdinfo_field(line, name);
  return p ? parse_hex(p) : 0;
}

// fdinfo prints devices as the kernel holds them (major << 20 | minor); stat encodes them as glibc.
uint64_t kernel_dev(uint64_t st_dev) {
  uint64_t major = ((st_dev >> 32) & 0xfffff000) | ((st_dev >> 8) & 0xfff);
  uint64_t minor = ((st_dev >> 12) & 0xffffff00) | (st_dev & 0xff);
  return major << 20 | minor;
}

int64_t timespec_ns(const struct timespec& t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

// ---- one function per kind -----------------------------------------------------------------------
int capture_signalfd(const FdProbe& probe, StasisFdRecord& r, LogLine& error) {
  r.kind = STASIS_FD_SIGNALFD;
  StasisSignalfdData signalfd{};
  bool seen = false;
  for_each_fdinfo_line(probe.fd, [&](const char* line) {
    if (const char* p = fdinfo_field(line, "sigmask:")) signalfd.mask = parse_hex(p), seen = true;
  });
  set_kind_data(r, signalfd);
  if (!seen) {
    error << "cannot read the signal mask of signalfd descriptor " << probe.fd << "; not checkpointing";
    return -1;
  }
  return 1;
}

bool kernel_can_set_timer_ticks() {
  static int known = -1;  // the kernel does not change under a running program
  if (known < 0) {
    long probe = STASIS_SYS2(SYS_timerfd_create, CLOCK_MONOTONIC, TFD_CLOEXEC);
    uint64_t one = 1;
    known = probe >= 0 && STASIS_SYS3(SYS_ioctl, probe, TFD_IOC_SET_TICKS, &one) == 0;
    if (probe >= 0) STASIS_SYS1(SYS_close, probe);
  }
  return known == 1;
}

int capture_timerfd(const FdProbe& probe, StasisFdRecord& r, LogLine& error) {
  r.kind = STASIS_FD_TIMERFD;
  struct itimerspec now_left {};
  if (STASIS_SYS2(SYS_timerfd_gettime, probe.fd, &now_left) != 0) {
    error << "cannot read timerfd descriptor " << probe.fd << "; not checkpointing";
    return -1;
  }
  StasisTimerfdData timer{};
  bool have_clock = false;
  for_each_fdinfo_line(probe.fd, [&](const char* line) {
    if (const char* p = fdinfo_field(line, "clockid:")) timer.clock = parse_decimal(p), have_clock = true;
    if (const char* p = fdinfo_field(line, "ticks:")) timer.unread_expirations = parse_decimal(p);
    if (const char* p = fdinfo_field(line, "settime flags:")) timer.settime_flags = parse_octal(p);
  });
  if (!have_clock) {
    error << "cannot read the clock of timerfd descriptor " << probe.fd << "; not checkpointing";
    return -1;
  }
  int64_t left = timespec_ns(now_left.it_value);
  if (left > 0 && (timer.settime_flags & TFD_TIMER_ABSTIME)) {
    // An absolute timer stays absolute: its deadline on its own clock, as the program set it.
    struct timespec clock_now {};
    STASIS_SYS2(SYS_clock_gettime, timer.clock, &clock_now);
    timer.clock_at_checkpoint_ns = static_cast<uint64_t>(timespec_ns(clock_now));
    left += timespec_ns(clock_now);
  }
  timer.next_expiration_ns = static_cast<uint64_t>(left);
  timer.interval_ns = static_cast<uint64_t>(timespec_ns(now_left.it_interval));
  set_kind_data(r, timer);
  if (timer.unread_expirations > 0 && !kernel_can_set_timer_ticks()) {
    error << "timerfd descriptor " << probe.fd << " has " << static_cast<unsigned long>(timer.unread_expirations)
          << " expirations not yet read, and this kernel cannot give them back at restart "
          << "(TFD_IOC_SET_TICKS needs CONFIG_CHECKPOINT_RESTORE); not checkpointing";
    return -1;
  }
  return 1;
}

constexpr uint32_t kEpollEventBits = ~(EPOLLONESHOT | EPOLLET | EPOLLWAKEUP | EPOLLEXCLUSIVE);

int capture_epoll(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  r.kind = STASIS_FD_EPOLL;
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != probe.fd) return 1;
  uint32_t count = 0;
  for_each_fdinfo_line(probe.fd, [&](const char* line) { count += str_starts(line, "tfd:"); });
  auto* interests = static_cast<StasisEpollInterest*>(data.arena().alloc(sizeof(StasisEpollInterest) * (count + 1)));
  if (!interests) {
    error << "epoll descriptor " << probe.fd << " has too many interests to save";
    return -1;
  }
  uint32_t n = 0;
  for_each_fdinfo_line(probe.fd, [&](const char* line) {
    const char* tfd = fdinfo_field(line, "tfd:");
    if (!tfd || n == count) return;
    interests[n++] = {static_cast<int32_t>(parse_decimal(tfd)),
                      static_cast<uint32_t>(hex_field(line, "events:")), hex_field(line, "data:")};
  });
  const long pid = sys_getpid();
  for (uint32_t i = 0; i < n; i++) {
    const StasisEpollInterest& it = interests[i];
    kcmp_epoll_slot slot{static_cast<uint32_t>(probe.fd), static_cast<uint32_t>(it.fd), 0};
    for (uint32_t j = 0; j < i; j++) slot.toff += interests[j].fd == it.fd;  // same number, older file
    if (is_runtime_fd(it.fd) || STASIS_SYS5(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, it.fd, &slot) != 0) {
      error << "epoll descriptor " << probe.fd << " watches a file added as descriptor " << it.fd
            << ", which has been closed or reused since (epoll keeps the file); its interest "
            << "cannot be re-created by number; not checkpointing";
      return -1;
    }
    if ((it.events & EPOLLONESHOT) && !(it.events & kEpollEventBits)) {
      // A fired one-shot interest. EPOLL_CTL_ADD always arms EPOLLERR|EPOLLHUP, so restart
      // disarms it again by letting it fire once; that needs the target ready for something.
      struct pollfd target{it.fd, static_cast<short>(POLLIN | POLLOUT | POLLPRI), 0};
      struct timespec zero {};
      if (STASIS_SYS5(SYS_ppoll, &target, 1, &zero, nullptr, 0) != 1) {
        error << "epoll descriptor " << probe.fd << " holds a fired one-shot interest in descriptor "
              << it.fd << ", which is ready for nothing now, so restart could not re-create it "
              << "disarmed; not checkpointing (try again once it is re-armed)";
        return -1;
      }
    }
  }
  set_kind_data(r, StasisEpollData{n});
  if (n && !data.add_ref(probe.fd, STASIS_FD_DATA_EPOLL, interests, sizeof(StasisEpollInterest) * n)) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

// The newest path the wrappers recorded for watch `wd` of the instance open at `fd`.
const RecordedWatch* recorded_watch(int fd, int wd) {
  const RecordedWatch* best = nullptr;
  const long pid = sys_getpid();
  for (const auto& w : g_watches) {
    if (w.state.load(std::memory_order_acquire) != kPublished || w.wd != wd) continue;
    if (best && best->sequence > w.sequence) continue;
    if (w.fd == fd || STASIS_SYS5(SYS_kcmp, pid, pid, KCMP_FILE, fd, w.fd) == 0) best = &w;
  }
  return best;
}

int capture_inotify(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  r.kind = STASIS_FD_INOTIFY;
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != probe.fd) return 1;
  // Unread events cannot be put back into the kernel's queue, and reading them here would take
  // them from the program if it runs on. So a checkpoint waits for a moment when the program has
  // read its events: this one is refused, and the program runs on unharmed.
  int queued = 0;
  if (STASIS_SYS3(SYS_ioctl, probe.fd, FIONREAD, &queued) != 0) {
    error << "cannot tell whether inotify descriptor " << probe.fd << " has unread events; not checkpointing";
    return -1;
  }
  if (queued > 0) {
    error << "inotify descriptor " << probe.fd << " has " << queued << " bytes of events the program "
          << "has not read yet; not checkpointing (try again once it has read them)";
    return -1;
  }
  uint32_t count = 0;
  for_each_fdinfo_line(probe.fd, [&](const char* line) { count += str_starts(line, "inotify wd:"); });
  auto* watches = static_cast<StasisInotifyWatch*>(data.arena().alloc(sizeof(StasisInotifyWatch) * (count + 1)));
  if (!watches) {
    error << "inotify descriptor " << probe.fd << " has too many watches to save";
    return -1;
  }
  uint32_t n = 0;
  int32_t last_wd = probe.fd < kMaxTrackedInotifyFds ? g_last_wd[probe.fd].load() : 0;
  bool ok = true;
  for_each_fdinfo_line(probe.fd, [&](const char* line) {
    if (!ok || !str_starts(line, "inotify wd:") || n == count) return;
    const int wd = static_cast<int>(hex_field(line, "wd:"));
    const uint64_t ino = hex_field(line, "ino:"), dev = hex_field(line, "sdev:");
    const RecordedWatch* rec = recorded_watch(probe.fd, wd);
    if (!rec) {
      error << "inotify descriptor " << probe.fd << " has watch " << wd << " (inode " << ino
            << ") whose path Stasis did not see being added (more than " << kMaxRecordedWatches
            << " watches, or added without libc's inotify_add_watch); not checkpointing";
      ok = false;
      return;
    }
    struct stat st;
    int at_flags = (rec->add_flags & IN_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0;
    if (STASIS_SYS4(SYS_newfstatat, AT_FDCWD, rec->path, &st, at_flags) != 0 || st.st_ino != ino ||
        kernel_dev(st.st_dev) != dev) {
      error << "inotify descriptor " << probe.fd << ": watch " << wd << " was added for " << rec->path
            << ", which no longer names the watched file (inode " << ino
            << "), so restart could not watch it again; not checkpointing";
      ok = false;
      return;
    }
    if (rec->fd < kMaxTrackedInotifyFds && g_last_wd[rec->fd].load() > last_wd) last_wd = g_last_wd[rec->fd].load();
    StasisInotifyWatch& w = watches[n++];
    w = {};
    w.wd = wd;
    w.mask = static_cast<uint32_t>(hex_field(line, "mask:"));
    w.add_flags = rec->add_flags;
    str_copy(w.path, rec->path, sizeof w.path);
    for (uint32_t i = n - 1; i > 0 && watches[i - 1].wd > watches[i].wd; i--) {  // by ascending wd
      StasisInotifyWatch swap = watches[i];
      watches[i] = watches[i - 1];
      watches[i - 1] = swap;
    }
  });
  if (!ok) return -1;
  if (n && watches[n - 1].wd > last_wd) last_wd = watches[n - 1].wd;
  set_kind_data(r, StasisInotifyData{n, static_cast<uint64_t>(last_wd)});
  if (n && !data.add_ref(probe.fd, STASIS_FD_DATA_INOTIFY, watches, sizeof(StasisInotifyWatch) * n)) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

// Signal-driven I/O (O_ASYNC) on an event descriptor cannot be restored: `handled` unless so.
int unless_async(int handled, const FdProbe& probe, const StasisFdRecord& r, LogLine& error) {
  if (handled > 0 && (r.flags & O_ASYNC)) {
    error << "descriptor " << probe.fd << " (" << probe.link << ") uses signal-driven I/O (O_ASYNC), "
          << "which this version of Stasis cannot restore; not checkpointing";
    return -1;
  }
  return handled;
}

}  // namespace

int capture_epoll_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!str_starts(probe.link, "anon_inode:[eventpoll]")) return 0;
  return unless_async(capture_epoll(probe, r, data, error), probe, r, error);
}

int capture_signalfd_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList&, LogLine& error) {
  if (!str_starts(probe.link, "anon_inode:[signalfd]")) return 0;
  return unless_async(capture_signalfd(probe, r, error), probe, r, error);
}

int capture_timerfd_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList&, LogLine& error) {
  if (!str_starts(probe.link, "anon_inode:[timerfd]")) return 0;
  return unless_async(capture_timerfd(probe, r, error), probe, r, error);
}

int capture_inotify_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!str_starts(probe.link, "anon_inode:inotify")) return 0;
  return unless_async(capture_inotify(probe, r, data, error), probe, r, error);
}

}  // namespace stasis::rt

// The program's inotify calls, forwarded untouched; the paths are kept for the checkpoint.
using namespace stasis::rt;

extern "C" {

__attribute__((visibility("default"))) int inotify_init() {
  return new_inotify_instance(next_symbol(g_inotify_init, "inotify_init")());
}

__attribute__((visibility("default"))) int inotify_init1(int flags) {
  return new_inotify_instance(next_symbol(g_inotify_init1, "inotify_init1")(flags));
}

__attribute__((visibility("default"))) int inotify_add_watch(int fd, const char* path, uint32_t mask) {
  int wd = next_symbol(g_inotify_add_watch, "inotify_add_watch")(fd, path, mask);
  if (wd > 0) record_watch(fd, wd, path, mask);
  return wd;
}

__attribute__((visibility("default"))) int inotify_rm_watch(int fd, int wd) {
  int rc = next_symbol(g_inotify_rm_watch, "inotify_rm_watch")(fd, wd);
  if (rc == 0) forget_watches(fd, wd);
  return rc;
}

}  // extern "C"
