// Virtual pids at the library boundary: every call that takes or returns a pid translates it
// through the pid table (vpid.cc). Before the computation's first restart there is no table and
// each wrapper is one predictable branch in front of libc's function.
#include <dlfcn.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/rt.h"

using namespace stasis::rt;

namespace {
// A pid argument: positive = a process, below -1 = a process group, 0 and -1 as they are.
pid_t to_real(pid_t pid) {
  if (pid > 0) return static_cast<pid_t>(real_pid_of(pid));
  if (pid < -1) return static_cast<pid_t>(-real_pid_of(-pid));
  return pid;
}
pid_t to_virtual(pid_t pid) { return pid > 0 ? static_cast<pid_t>(virtual_pid_of(pid)) : pid; }

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))
}  // namespace

STASIS_EXPORT pid_t getpid() {
  if (have_pid_table() && g_config.original_pid) return static_cast<pid_t>(g_config.original_pid);
  return static_cast<pid_t>(STASIS_SYS0(SYS_getpid));
}

STASIS_EXPORT pid_t getppid() { return to_virtual(static_cast<pid_t>(STASIS_SYS0(SYS_getppid))); }

STASIS_EXPORT pid_t gettid() { return to_virtual(static_cast<pid_t>(STASIS_SYS0(SYS_gettid))); }

// syscall(2) with the pid-related numbers programs call directly (glibc has no wrapper for some).
STASIS_EXPORT long syscall(long number, ...) {
  static long (*real)(long, ...);
  va_list args;
  va_start(args, number);
  long a1 = va_arg(args, long), a2 = va_arg(args, long), a3 = va_arg(args, long);
  long a4 = va_arg(args, long), a5 = va_arg(args, long), a6 = va_arg(args, long);
  va_end(args);
  if (have_pid_table()) {
    switch (number) {
      case SYS_getpid: return getpid();
      case SYS_getppid: return getppid();
      case SYS_gettid: return gettid();
      case SYS_kill: a1 = to_real(static_cast<pid_t>(a1)); break;
      case SYS_tkill: a1 = to_real(static_cast<pid_t>(a1)); break;
      case SYS_tgkill:
        a1 = to_real(static_cast<pid_t>(a1));
        a2 = to_real(static_cast<pid_t>(a2));
        break;
      default: break;
    }
  }
  return next_symbol(real, "syscall")(number, a1, a2, a3, a4, a5, a6);
}

STASIS_EXPORT int kill(pid_t pid, int sig) {
  static int (*real)(pid_t, int);
  return next_symbol(real, "kill")(have_pid_table() ? to_real(pid) : pid, sig);
}

STASIS_EXPORT int killpg(pid_t pgrp, int sig) {
  static int (*real)(pid_t, int);
  return next_symbol(real, "killpg")(have_pid_table() ? to_real(pgrp) : pgrp, sig);
}

STASIS_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  static pid_t (*real)(pid_t, int*, int);
  if (!have_pid_table()) return next_symbol(real, "waitpid")(pid, status, options);
  return to_virtual(next_symbol(real, "waitpid")(to_real(pid), status, options));
}

STASIS_EXPORT pid_t wait(int* status) {
  static pid_t (*real)(int*);
  if (!have_pid_table()) return next_symbol(real, "wait")(status);
  return to_virtual(next_symbol(real, "wait")(status));
}

STASIS_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  static pid_t (*real)(int*, int, struct rusage*);
  if (!have_pid_table()) return next_symbol(real, "wait3")(status, options, usage);
  return to_virtual(next_symbol(real, "wait3")(status, options, usage));
}

STASIS_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  static pid_t (*real)(pid_t, int*, int, struct rusage*);
  if (!have_pid_table()) return next_symbol(real, "wait4")(pid, status, options, usage);
  return to_virtual(next_symbol(real, "wait4")(to_real(pid), status, options, usage));
}

STASIS_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  static int (*real)(idtype_t, id_t, siginfo_t*, int);
  if (!have_pid_table()) return next_symbol(real, "waitid")(idtype, id, info, options);
  if (idtype == P_PID || idtype == P_PGID) id = static_cast<id_t>(real_pid_of(static_cast<long>(id)));
  int r = next_symbol(real, "waitid")(idtype, id, info, options);
  if (r == 0 && info && info->si_pid > 0) info->si_pid = to_virtual(info->si_pid);
  return r;
}

STASIS_EXPORT int setpgid(pid_t pid, pid_t pgid) {
  static int (*real)(pid_t, pid_t);
  if (!have_pid_table()) return next_symbol(real, "setpgid")(pid, pgid);
  return next_symbol(real, "setpgid")(to_real(pid), to_real(pgid));
}

STASIS_EXPORT pid_t getpgid(pid_t pid) {
  static pid_t (*real)(pid_t);
  if (!have_pid_table()) return next_symbol(real, "getpgid")(pid);
  return to_virtual(next_symbol(real, "getpgid")(to_real(pid)));
}

STASIS_EXPORT pid_t getpgrp() { return to_virtual(static_cast<pid_t>(STASIS_SYS1(SYS_getpgid, 0))); }

STASIS_EXPORT pid_t getsid(pid_t pid) {
  static pid_t (*real)(pid_t);
  if (!have_pid_table()) return next_symbol(real, "getsid")(pid);
  return to_virtual(next_symbol(real, "getsid")(to_real(pid)));
}

STASIS_EXPORT pid_t tcgetpgrp(int fd) {
  static pid_t (*real)(int);
  return to_virtual(next_symbol(real, "tcgetpgrp")(fd));
}

STASIS_EXPORT int tcsetpgrp(int fd, pid_t pgrp) {
  static int (*real)(int, pid_t);
  return next_symbol(real, "tcsetpgrp")(fd, have_pid_table() ? to_real(pgrp) : pgrp);
}
