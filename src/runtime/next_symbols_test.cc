// find_next_definition must give what dlsym(RTLD_NEXT) gives from the same object, or nothing
// (then the runtime asks dlsym): never another definition.
#include "runtime/next_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace {

// The functions the runtime's wrappers resolve, and libc's multi-versioned ones among them
// (timer_settime, timer_getoverrun, pthread_cond_*: an old hidden and a new default version).
const char* const kWrappedNames[] = {
    "_Exit", "_Fork", "__poll_chk", "__ppoll_chk", "_exit", "accept", "accept4", "bind",
    "bsd_signal", "clock_gettime", "clock_nanosleep", "close", "connect", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "execv", "execve", "execveat", "execvp", "execvpe", "fexecve",
    "fork", "getpgid", "getsid", "inotify_add_watch", "inotify_init", "inotify_rm_watch", "ioctl",
    "kill", "killpg", "madvise", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "nanosleep",
    "open", "open64", "openat", "openat64", "pause", "pidfd_open", "poll", "posix_spawn",
    "posix_spawnp", "ppoll", "process_vm_readv", "process_vm_writev", "pselect",
    "pthread_cond_clockwait", "pthread_mutex_clocklock", "pthread_rwlock_clockrdlock",
    "pthread_rwlock_clockwrlock", "pthread_sigmask", "read", "recvfrom", "recvmmsg", "recvmsg",
    "select", "sem_clockwait", "semctl", "semget", "sendmmsg", "sendmsg", "sendto", "setpgid",
    "shmat", "shmctl", "shmget", "sigaction", "signal", "signalfd", "sigprocmask", "sigqueue",
    "sigset", "sigsuspend", "sigtimedwait", "sigwaitinfo", "syscall", "sysv_signal", "tcgetpgrp",
    "tcsetpgrp", "tgkill", "timer_getoverrun", "timer_settime", "timerfd_settime", "wait",
    "wait3", "wait4", "waitid", "waitpid", "fcntl", "fcntl64", "timer_create", "timer_delete",
    "pthread_cond_wait", "pthread_cond_timedwait", "pthread_create", "realpath", "posix_spawn",
    "_Znwm", "_ZdlPv"};

TEST(NextSymbols, SameDefinitionAsDlsymOrNone) {
  int found = 0;
  for (const char* name : kWrappedNames) {
    void* expected = dlsym(RTLD_NEXT, name);
    void* got = stasis::rt::find_next_definition(name);
    if (got == nullptr) continue;  // left to dlsym
    found++;
    EXPECT_EQ(got, expected) << name;
  }
  // The fast path must be the rule, not the exception (else it saves nothing).
  EXPECT_GE(found, static_cast<int>(sizeof kWrappedNames / sizeof *kWrappedNames) - 4);
}

TEST(NextSymbols, DefaultVersionOfMultiVersionedFunctions) {
  // glibc keeps the pre-2.3.3 timer_settime as a hidden version beside the default one.
  void* fast = stasis::rt::find_next_definition("timer_settime");
  ASSERT_NE(fast, nullptr);
  EXPECT_EQ(fast, dlvsym(RTLD_NEXT, "timer_settime", "GLIBC_2.3.3"));
  EXPECT_NE(fast, dlvsym(RTLD_NEXT, "timer_settime", "GLIBC_2.2.5"));
}

TEST(NextSymbols, IndirectFunctionsAndMissingNamesAreLeftToDlsym) {
  // memcpy is a GNU indirect function: its resolver picks the implementation.
  EXPECT_EQ(stasis::rt::find_next_definition("memcpy"), nullptr);
  EXPECT_EQ(stasis::rt::find_next_definition("stasis_no_such_function"), nullptr);
  EXPECT_EQ(dlsym(RTLD_NEXT, "stasis_no_such_function"), nullptr);
}

}  // namespace
