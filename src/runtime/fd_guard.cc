// The runtime's own descriptors (the coordinator connection, the pid table, the userfaultfd of
// incremental checkpoints) outlive a program that closes every descriptor it did not open: a
// daemon, or an MPI launcher's child closing 3..getdtablesize() before it execs the next
// program (Open MPI's mpirun and orted do). Without this, such a process would drop out of the
// computation while it joins or leave it without a pid table. Those closes are pretended;
// everything else goes through at the cost of one comparison.
#include <errno.h>
#include <sys/syscall.h>

#include "common/raw_syscall.h"
#include "runtime/rt.h"

using stasis::rt::g_config;
using stasis::rt::is_runtime_fd;
using stasis::rt::kCoordinatorFd;
using stasis::rt::kPidTableFd;
using stasis::rt::next_symbol;

namespace {

using CloseFn = int (*)(int);
CloseFn g_close = nullptr;

bool guarded(int fd) { return g_config.active && is_runtime_fd(fd); }

int raw_close_range(unsigned first, unsigned last, unsigned flags) {
  long r = STASIS_SYS3(SYS_close_range, first, last, flags);
  if (r < 0) errno = static_cast<int>(-r);
  return r < 0 ? -1 : 0;
}

// close_range over [first, last] leaving the runtime's descriptors alone.
int close_range_around(unsigned first, unsigned last, unsigned flags) {
  int tracking = stasis::rt::dirty_tracking_fd();
  int guarded_fds[3] = {tracking < kPidTableFd ? tracking : -1, kPidTableFd, kCoordinatorFd};  // ascending
  unsigned from = first;
  for (int g : guarded_fds) {
    if (g < 0 || static_cast<unsigned>(g) < from || static_cast<unsigned>(g) > last) continue;
    if (static_cast<unsigned>(g) > from && raw_close_range(from, static_cast<unsigned>(g) - 1, flags) != 0) return -1;
    from = static_cast<unsigned>(g) + 1;
  }
  return from <= last ? raw_close_range(from, last, flags) : 0;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int close(int fd) {
  if (__builtin_expect(guarded(fd), 0)) return 0;
  return next_symbol(g_close, "close")(fd);
}

__attribute__((visibility("default"))) int close_range(unsigned first, unsigned last, int flags) {
  if (!g_config.active) return raw_close_range(first, last, static_cast<unsigned>(flags));
  return close_range_around(first, last, static_cast<unsigned>(flags));
}

__attribute__((visibility("default"))) void closefrom(int lowfd) {
  close_range(lowfd < 0 ? 0u : static_cast<unsigned>(lowfd), ~0u, 0);
}

}  // extern "C"
