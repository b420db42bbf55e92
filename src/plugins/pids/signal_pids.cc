// Pids inside signals: the sender's pid in the siginfo a SA_SIGINFO handler receives, and in what
// a signalfd read returns. The kernel writes real pids there; after a restart the program must
// see virtual ones. Before the computation's first restart nothing here runs: sigaction and read
// test for the pid table once and go straight to libc.
//
// Handlers get a trampoline in front only once there is a pid table: after a restart the runtime
// puts it in front of the SA_SIGINFO handlers restored from the image (wrap_program_siginfo_handlers),
// and sigaction puts it in front of later ones. The kernel then holds the trampoline, so the
// next checkpoint saves it, and the program's own handler stays in g_program_handlers (part of
// the runtime's memory, saved and restored with it).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "plugins/pids/pids.h"
#include "runtime/rt.h"

namespace stasis::rt {
namespace {

using InfoHandler = void (*)(int, siginfo_t*, void*);
constexpr int kSignalCount = 65;  // 1.._NSIG-1
InfoHandler g_program_handlers[kSignalCount];

// Whether si_pid is a pid in this siginfo (for faults and timers the same bytes hold other things).
bool carries_sender_pid(int signo, int code) {
  switch (code) {
    case SI_USER:
    case SI_QUEUE:
    case SI_TKILL:
    case SI_MESGQ: return true;
    default: return signo == SIGCHLD && code > 0;  // CLD_EXITED ... CLD_CONTINUED
  }
}

void pid_translating_trampoline(int sig, siginfo_t* info, void* context) {
  translate_siginfo_pid(info);
  InfoHandler handler = sig > 0 && sig < kSignalCount ? __atomic_load_n(&g_program_handlers[sig], __ATOMIC_ACQUIRE) : nullptr;
  if (handler) handler(sig, info, context);
}

// Handlers compared as addresses (sa_handler and sa_sigaction share their storage).
uintptr_t address_of(InfoHandler handler) { return reinterpret_cast<uintptr_t>(handler); }
uintptr_t address_of(sighandler_t handler) { return reinterpret_cast<uintptr_t>(handler); }

bool is_program_function(InfoHandler handler) {
  return address_of(handler) != address_of(SIG_DFL) && address_of(handler) != address_of(SIG_IGN) &&
         handler != pid_translating_trampoline;
}

// ---- signalfd --------------------------------------------------------------------------------
// Descriptors the program made with signalfd() (inherited by its forked children with the rest
// of its memory): only reads from them are looked at.
constexpr int kSignalfdSlots = 1024;
uint64_t g_signalfd_bits[kSignalfdSlots / 64];

bool maybe_signalfd(int fd) {
  return fd >= 0 && fd < kSignalfdSlots && (g_signalfd_bits[fd / 64] & (1ull << (fd % 64)));
}

// The number may have been closed and reused since: ask the kernel what it is now, and forget
// the number when it is something else (signalfd() marks it again if it becomes one).
bool is_signalfd(int fd) {
  char path[32] = "/proc/self/fd/";
  format_uint(path + str_len(path), static_cast<unsigned long>(fd));
  char link[32];
  long n = STASIS_SYS4(SYS_readlinkat, AT_FDCWD, path, link, sizeof link - 1);
  link[n > 0 ? n : 0] = 0;
  if (str_eq(link, "anon_inode:[signalfd]")) return true;
  __atomic_fetch_and(&g_signalfd_bits[fd / 64], ~(1ull << (fd % 64)), __ATOMIC_RELAXED);
  return false;
}

// Out of line: it runs only after a restart.
__attribute__((noinline)) void translate_signalfd_records(int fd, void* buf, long bytes) {
  if (bytes < static_cast<long>(sizeof(signalfd_siginfo)) || !maybe_signalfd(fd) || !is_signalfd(fd)) return;
  auto* records = static_cast<signalfd_siginfo*>(buf);
  for (long i = 0; i < bytes / static_cast<long>(sizeof(signalfd_siginfo)); i++)
    if (records[i].ssi_pid > 0 && carries_sender_pid(static_cast<int>(records[i].ssi_signo), records[i].ssi_code))
      records[i].ssi_pid = static_cast<uint32_t>(virtual_pid_of(records[i].ssi_pid));
}

}  // namespace

void translate_siginfo_pid(siginfo_t* info) {
  if (info && have_pid_table() && info->si_pid > 0 && carries_sender_pid(info->si_signo, info->si_code))
    info->si_pid = static_cast<pid_t>(virtual_pid_of(info->si_pid));
}

void wrap_program_siginfo_handlers() {
  for (int sig = 1; sig < kSignalCount; sig++) {
    struct sigaction action;
    if (sig == SIGKILL || sig == SIGSTOP || sig == g_config.checkpoint_signal ||
        real_sigaction(sig, nullptr, &action) != 0 || !(action.sa_flags & SA_SIGINFO) ||
        !is_program_function(action.sa_sigaction))
      continue;
    __atomic_store_n(&g_program_handlers[sig], action.sa_sigaction, __ATOMIC_RELEASE);
    action.sa_sigaction = pid_translating_trampoline;
    real_sigaction(sig, &action, nullptr);
  }
}

int sigaction_translating_pids(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig <= 0 || sig >= kSignalCount) return real_sigaction(sig, act, old);
  InfoHandler previous = __atomic_load_n(&g_program_handlers[sig], __ATOMIC_ACQUIRE);
  struct sigaction wrapped;
  if (act && (act->sa_flags & SA_SIGINFO) && is_program_function(act->sa_sigaction)) {
    wrapped = *act;
    wrapped.sa_sigaction = pid_translating_trampoline;
    __atomic_store_n(&g_program_handlers[sig], act->sa_sigaction, __ATOMIC_RELEASE);
    act = &wrapped;
  }
  int rc = real_sigaction(sig, act, old);
  if (rc == 0 && old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == pid_translating_trampoline)
    old->sa_sigaction = previous;
  return rc;
}

sighandler_t program_handler(int sig, sighandler_t kernel_handler) {
  if (address_of(kernel_handler) != address_of(pid_translating_trampoline) || sig <= 0 || sig >= kSignalCount)
    return kernel_handler;
  return reinterpret_cast<sighandler_t>(address_of(__atomic_load_n(&g_program_handlers[sig], __ATOMIC_ACQUIRE)));
}

}  // namespace stasis::rt

using namespace stasis::rt;

namespace {
// Resolved on first call (next_symbol: a lock-free lookup, safe in a signal handler).
int (*g_signalfd)(int, const sigset_t*, int);
ssize_t (*g_read)(int, void*, size_t);
}  // namespace

extern "C" __attribute__((visibility("default"))) int signalfd(int fd, const sigset_t* mask, int flags) {
  int made = next_symbol(g_signalfd, "signalfd")(fd, mask, flags);
  if (made >= 0 && made < kSignalfdSlots)
    __atomic_fetch_or(&g_signalfd_bits[made / 64], 1ull << (made % 64), __ATOMIC_RELAXED);
  return made;
}

extern "C" __attribute__((visibility("default"))) ssize_t read(int fd, void* buf, size_t count) {
  auto real = next_symbol(g_read, "read");
  if (!have_pid_table()) return real(fd, buf, count);
  ssize_t got = real(fd, buf, count);
  translate_signalfd_records(fd, buf, got);
  return got;
}
