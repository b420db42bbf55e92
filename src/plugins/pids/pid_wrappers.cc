// Virtual pids at the library boundary: every call that takes or returns a pid translates it
// through the pid table (vpid.cc). Before the computation's first restart there is no table and
// each wrapper is one predictable branch in front of libc's function.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <spawn.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugins/files/capture.h"
#include "plugins/kvm/construction.h"
#include "plugins/launchers/remote_launch.h"
#include "plugins/pids/pids.h"
#include "runtime/rt.h"

using namespace stasis::rt;

namespace {
pid_t to_real(pid_t pid) { return static_cast<pid_t>(real_pid_argument(pid)); }
pid_t to_virtual(pid_t pid) { return static_cast<pid_t>(virtual_pid_result(pid)); }

// The kernel hands a queued siginfo to the receiver as the sender wrote it: the sender's pid in it
// is virtual, and the receiver's translation expects a real one.
long with_real_sender(long info_address, siginfo_t* copy) {
  if (info_address == 0) return 0;
  __builtin_memcpy(copy, reinterpret_cast<const void*>(info_address), sizeof *copy);
  if (copy->si_pid > 0) copy->si_pid = static_cast<pid_t>(real_pid_of(copy->si_pid));
  return reinterpret_cast<long>(copy);
}

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))
}  // namespace

STASIS_EXPORT pid_t getpid() {
  if (have_pid_table() && g_config.original_pid) return static_cast<pid_t>(g_config.original_pid);
  return static_cast<pid_t>(STASIS_SYS0(SYS_getpid));
}

STASIS_EXPORT pid_t getppid() { return to_virtual(static_cast<pid_t>(STASIS_SYS0(SYS_getppid))); }

// A thread started after a restart may have a kernel tid that the computation already uses as a
// virtual pid: it gets its own, as a new process does.
STASIS_EXPORT pid_t gettid() {
  long tid = STASIS_SYS0(SYS_gettid);
  return static_cast<pid_t>(have_pid_table() ? claim_virtual_pid(tid) : tid);
}

// syscall(2) with the pid-related numbers programs call directly (glibc has no wrapper for some).
STASIS_EXPORT long syscall(long number, ...) {
  static long (*real)(long, ...);
  va_list args;
  va_start(args, number);
  long a1 = va_arg(args, long), a2 = va_arg(args, long), a3 = va_arg(args, long);
  long a4 = va_arg(args, long), a5 = va_arg(args, long), a6 = va_arg(args, long);
  va_end(args);
  // Not pid-related: a call another kind wraps (the capture table's syscall rows).
  if (long result; kind_syscall(number, {a1, a2, a3, a4, a5, a6}, result)) return result;
  if (number == SYS_execve || number == SYS_execveat) {  // not pid-related: guarded (runtime/rt.h)
    bool entered = enter_exec();
    long r = next_symbol(real, "syscall")(number, a1, a2, a3, a4, a5, a6);
    exec_failed(entered);
    return r;
  }
  if (have_pid_table()) {
    siginfo_t info;
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
      case SYS_pidfd_open:
      case SYS_process_vm_readv:
      case SYS_process_vm_writev: a1 = to_real(static_cast<pid_t>(a1)); break;
      case SYS_rt_sigqueueinfo:  // (tgid, sig, info)
        a1 = to_real(static_cast<pid_t>(a1));
        return next_symbol(real, "syscall")(number, a1, a2, with_real_sender(a3, &info), a4, a5, a6);
      case SYS_rt_tgsigqueueinfo:  // (tgid, tid, sig, info)
        a1 = to_real(static_cast<pid_t>(a1));
        a2 = to_real(static_cast<pid_t>(a2));
        return next_symbol(real, "syscall")(number, a1, a2, a3, with_real_sender(a4, &info), a5, a6);
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

// A wait blocked at a checkpoint goes on after the restart, inside libc, with the kernel pid it
// was given before: the result is translated with the table as it is now, and a wait for one
// child (or group), which now has another kernel pid, fails with ECHILD and is issued again
// with the new one. That holds after any restart, not only the first (which makes the table).
template <typename Wait>
pid_t wait_translated(pid_t pid, Wait wait) {
  for (;;) {
    pid_t real = have_pid_table() ? to_real(pid) : pid;
    pid_t r = wait(real);
    if (!have_pid_table()) return r;  // the common case: no restart, ever
    if (r < 0 && errno == ECHILD && pid != -1 && pid != 0 && to_real(pid) != real) continue;
    return to_virtual(r);
  }
}

STASIS_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  static pid_t (*real)(pid_t, int*, int);
  return wait_translated(pid, [&](pid_t p) { return next_symbol(real, "waitpid")(p, status, options); });
}

STASIS_EXPORT pid_t wait(int* status) {
  static pid_t (*real)(int*);
  return wait_translated(-1, [&](pid_t) { return next_symbol(real, "wait")(status); });
}

STASIS_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  static pid_t (*real)(int*, int, struct rusage*);
  return wait_translated(-1, [&](pid_t) { return next_symbol(real, "wait3")(status, options, usage); });
}

STASIS_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  static pid_t (*real)(pid_t, int*, int, struct rusage*);
  return wait_translated(pid, [&](pid_t p) { return next_symbol(real, "wait4")(p, status, options, usage); });
}

STASIS_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  static int (*real)(idtype_t, id_t, siginfo_t*, int);
  auto translated_id = [&] {
    return idtype == P_PID || idtype == P_PGID ? static_cast<id_t>(real_pid_of(static_cast<long>(id))) : id;
  };
  for (;;) {
    id_t asked = have_pid_table() ? translated_id() : id;
    int r = next_symbol(real, "waitid")(idtype, asked, info, options);
    if (!have_pid_table()) return r;
    if (r < 0 && errno == ECHILD && translated_id() != asked) continue;  // blocked across a restart
    if (r == 0 && info && info->si_pid > 0) info->si_pid = to_virtual(info->si_pid);
    return r;
  }
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

namespace {
// Between the kernel's answer (a real pid) and its translation, a checkpoint must not stop the
// thread: restarted from there, the child would have another kernel pid and the translation
// would name nobody. So starting a child is a critical section once there is a table (before
// the first restart a child's virtual pid is its real one, whatever happens next). A forked
// child leaves the section it inherited (runtime.cc's atfork handler counts it in).
bool enter_child_start() {
  if (!have_pid_table() || !g_config.active) return false;
  stasis_runtime_delay_checkpoints();
  return true;
}

long child_started(long child, bool entered) {
  if (child > 0 && entered) child = claim_virtual_pid(child);
  if (entered) stasis_runtime_allow_checkpoints();
  return child;
}
}  // namespace

STASIS_EXPORT pid_t fork() {
  static pid_t (*real)();
  bool entered = enter_child_start();
  pid_t child = next_symbol(real, "fork")();
  return static_cast<pid_t>(child_started(child, entered));
}

// vfork: the child runs on this stack until it execs or exits, so the wrapper cannot be a C
// function (the child would return through, and reuse, the frame the parent returns through).
// As libc's own vfork does, the return address waits in a register across the system call; the
// parent then has the child's real pid made virtual (the child claims the same virtual pid when
// its program starts: claim_virtual_pid's two sides).
// The critical section of the child's start (enter_child_start) is the parent's: the child only
// execs or exits, and leaves it alone (runtime.cc's exec guard skips vfork children).
extern "C" __attribute__((visibility("hidden"))) long stasis_vfork_enter() { return enter_child_start(); }
extern "C" __attribute__((visibility("hidden"))) long stasis_vfork_result(long result, long entered) {
  if (result < 0 && result > -4096) {
    child_started(-1, entered != 0);
    errno = static_cast<int>(-result);
    return -1;
  }
  return child_started(result, entered != 0);
}
asm(R"(
  .text
  .globl vfork
  .type vfork, @function
vfork:
  subq $8, %rsp
  call stasis_vfork_enter
  addq $8, %rsp
  movq %rax, %r8
  popq %rdx
  movl $58, %eax
  syscall
  pushq %rdx
  testq %rax, %rax
  jz 1f
  subq $8, %rsp
  movq %rax, %rdi
  movq %r8, %rsi
  call stasis_vfork_result
  addq $8, %rsp
1:
  ret
  .size vfork, .-vfork
)");
static_assert(SYS_vfork == 58, "the system call number in vfork above");

// _Fork (fork without the atfork handlers): the parent's result is made virtual like fork's.
STASIS_EXPORT pid_t _Fork() {
  static pid_t (*real)();
  bool entered = enter_child_start();
  pid_t child = next_symbol(real, "_Fork")();
  return static_cast<pid_t>(child_started(child, entered));
}

namespace {
using SpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                        char* const[], char* const[]);
int spawn_with_virtual_pid(SpawnFn real, pid_t* pid, const char* program, const posix_spawn_file_actions_t* actions,
                           const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  pid_t child = -1;
  bool entered = enter_child_start();
  int rc = spawn_remote_aware(real, &child, program, actions, attr, argv, envp);
  child = static_cast<pid_t>(child_started(rc == 0 ? child : -1, entered));
  if (rc == 0 && pid) *pid = child;
  return rc;
}
}  // namespace

STASIS_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                              const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static SpawnFn real;
  return spawn_with_virtual_pid(next_symbol(real, "posix_spawn"), pid, path, actions, attr, argv, envp);
}

STASIS_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                               const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static SpawnFn real;
  return spawn_with_virtual_pid(next_symbol(real, "posix_spawnp"), pid, file, actions, attr, argv, envp);
}

STASIS_EXPORT int sigqueue(pid_t pid, int sig, const union sigval value) {
  static int (*real)(pid_t, int, const union sigval);
  return next_symbol(real, "sigqueue")(have_pid_table() ? to_real(pid) : pid, sig, value);
}

STASIS_EXPORT int tgkill(pid_t tgid, pid_t tid, int sig) {
  static int (*real)(pid_t, pid_t, int);
  if (!have_pid_table()) return next_symbol(real, "tgkill")(tgid, tid, sig);
  return next_symbol(real, "tgkill")(to_real(tgid), to_real(tid), sig);
}

STASIS_EXPORT int pidfd_open(pid_t pid, unsigned int flags) {
  static int (*real)(pid_t, unsigned int);
  return next_symbol(real, "pidfd_open")(have_pid_table() ? to_real(pid) : pid, flags);
}

// Cross-memory attach: MPI libraries copy large messages straight from a peer rank's memory.
using ProcessVmFn = ssize_t (*)(pid_t, const struct iovec*, unsigned long, const struct iovec*, unsigned long,
                                unsigned long);
STASIS_EXPORT ssize_t process_vm_readv(pid_t pid, const struct iovec* local, unsigned long local_count,
                                       const struct iovec* remote, unsigned long remote_count, unsigned long flags) {
  static ProcessVmFn real;
  return next_symbol(real, "process_vm_readv")(have_pid_table() ? to_real(pid) : pid, local, local_count, remote,
                                                remote_count, flags);
}

STASIS_EXPORT ssize_t process_vm_writev(pid_t pid, const struct iovec* local, unsigned long local_count,
                                        const struct iovec* remote, unsigned long remote_count, unsigned long flags) {
  static ProcessVmFn real;
  return next_symbol(real, "process_vm_writev")(have_pid_table() ? to_real(pid) : pid, local, local_count, remote,
                                                 remote_count, flags);
}

// ---- descriptor owners (SIGIO/SIGURG targets) and lock holders -------------------------------
namespace {
int fcntl_translating_pids(int (*real)(int, int, ...), int fd, int cmd, void* arg) {
  switch (cmd) {
    case F_SETOWN: return real(fd, cmd, static_cast<long>(to_real(static_cast<pid_t>(reinterpret_cast<long>(arg)))));
    case F_GETOWN: {
      // Negative: a process group.
      int owner = real(fd, cmd);
      return owner < -1 ? -to_virtual(-owner) : to_virtual(owner);
    }
    case F_SETOWN_EX: {
      if (!arg) break;
      f_owner_ex owner = *static_cast<const f_owner_ex*>(arg);
      owner.pid = to_real(owner.pid);
      return real(fd, cmd, &owner);
    }
    case F_GETOWN_EX: {
      int rc = real(fd, cmd, arg);
      if (rc == 0 && arg) static_cast<f_owner_ex*>(arg)->pid = to_virtual(static_cast<f_owner_ex*>(arg)->pid);
      return rc;
    }
    case F_GETLK: {  // the holder of a conflicting POSIX lock (OFD locks report -1)
      int rc = real(fd, cmd, arg);
      if (rc == 0 && arg) static_cast<struct flock*>(arg)->l_pid = to_virtual(static_cast<struct flock*>(arg)->l_pid);
      return rc;
    }
    default: break;
  }
  return real(fd, cmd, arg);
}
}  // namespace

// fcntl's third argument, when there is one, is an int or a pointer: passed on as a pointer-size
// value whatever the command (as libc itself does).
#define STASIS_FCNTL_WRAPPER(name)                                                \
  STASIS_EXPORT int name(int fd, int cmd, ...) {                                  \
    static int (*real)(int, int, ...);                                            \
    va_list args;                                                                 \
    va_start(args, cmd);                                                          \
    void* arg = va_arg(args, void*);                                              \
    va_end(args);                                                                 \
    if (!have_pid_table()) return next_symbol(real, #name)(fd, cmd, arg);         \
    return fcntl_translating_pids(next_symbol(real, #name), fd, cmd, arg);        \
  }
STASIS_FCNTL_WRAPPER(fcntl)
STASIS_FCNTL_WRAPPER(fcntl64)

namespace {
int ioctl_translating_pids(int (*real)(int, unsigned long, ...), int fd, unsigned long request, void* arg) {
  auto* pid = static_cast<pid_t*>(arg);
  switch (request) {
    case FIOSETOWN:
    case SIOCSPGRP:
    case TIOCSPGRP: {
      if (!pid) break;
      pid_t real_pid = to_real(*pid);
      return real(fd, request, &real_pid);
    }
    case FIOGETOWN:
    case SIOCGPGRP:
    case TIOCGPGRP:
    case TIOCGSID: {
      int rc = real(fd, request, arg);
      if (rc == 0 && pid) *pid = *pid < -1 ? -to_virtual(-*pid) : to_virtual(*pid);
      return rc;
    }
    default: break;
  }
  return real(fd, request, arg);
}
}  // namespace

STASIS_EXPORT int ioctl(int fd, unsigned long request, ...) {
  static int (*real)(int, unsigned long, ...);
  va_list args;
  va_start(args, request);
  void* arg = va_arg(args, void*);
  va_end(args);
  if (__builtin_expect(is_kvm_request(request), 0)) return kvm_ioctl(next_symbol(real, "ioctl"), fd, request, arg);
  if (!have_pid_table()) return next_symbol(real, "ioctl")(fd, request, arg);
  return ioctl_translating_pids(next_symbol(real, "ioctl"), fd, request, arg);
}
