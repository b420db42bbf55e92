// A fork child of the computation gets its checkpoint thread only when it needs one, not in
// fork(). Most of them (a shell's commands, make's jobs) exec within microseconds; a thread cost
// each several hundred microseconds to create (copy-on-write faults) and the exec more to tear it
// down. (An exec'd program starts its thread at once: its threads may come from a libc the
// pthread_create wrapper never sees, as a split MPI rank's lower half.) The thread is started:
// - when the process starts a thread of its own (the pthread_create wrapper), in plain code;
// - when a checkpoint needs the process: its parent's checkpoint thread, at the "children"
//   barrier, signals each child that has the checkpoint signal's handler and no second thread
//   (signal_threadless_children), every 20 ms until it has joined;
// - when its parent ends (the parent-death signal: nobody would signal an orphan), or the
//   program asks for a parent-death signal of its own (the prctl wrapper), or a checkpoint
//   through the application API.
// The two signals arrive at any point of the program, and pthread_create is not
// async-signal-safe: it takes locks, and allocates with malloc. In a process of one thread, the
// only holder of those is the interrupted code, so the handler starts the thread only where that
// code holds none (safe_to_start_thread): outside libc, the dynamic loader, the runtime and the
// malloc in use and not inside one of the program's own signal handlers (which may have
// interrupted malloc), or blocked in a system call of libc's that malloc does not make.
// Elsewhere it waits for the next signal.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <linux/kcmp.h>
#include <sys/prctl.h>
#include <time.h>
#include <ucontext.h>

#include "runtime/interrupted_calls.h"
#include "runtime/rt.h"

namespace stasis::rt {

std::atomic<bool> g_thread_deferred{false};

namespace {

// Code in which an interrupted thread may hold what pthread_create needs.
struct CodeRange {
  uintptr_t begin, end;
  bool libc;  // libc's own: safe while blocked in one of its system calls (not malloc's)
};
constexpr uint32_t kMaxRanges = 16;
CodeRange g_ranges[kMaxRanges];
uint32_t g_range_count = 0;
bool g_ranges_noted = false;
// The signal mask the program last set (sigprocmask, pthread_sigmask): while one of its signal
// handlers runs, the kernel has added that signal (and the handler's sa_mask) to it.
uint64_t g_program_mask = 0;

// The parent the deferral counted on, and a POSIX timer (kernel id) that repeats the signal
// while an orphan waits for a safe point: the parent-death signal comes once, and only a living
// parent signals again.
long g_deferred_parent = 0;
int g_retry_timer = -1;

void signal_again_soon() {
  if (g_retry_timer < 0) {
    struct sigevent event = {};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = g_config.checkpoint_signal;
    event._sigev_un._tid = static_cast<int>(sys_gettid());
    int id = -1;
    if (STASIS_SYS3(SYS_timer_create, CLOCK_MONOTONIC, &event, &id) != 0) return;
    g_retry_timer = id;
  }
  struct itimerspec in_5ms = {{0, 0}, {0, 5 * 1000000L}};
  STASIS_SYS4(SYS_timer_settime, g_retry_timer, 0, &in_5ms, nullptr);
}

void start_now(bool join_at_once) {
  if (g_retry_timer >= 0) {
    STASIS_SYS1(SYS_timer_delete, g_retry_timer);
    g_retry_timer = -1;
  }
  start_checkpoint_thread_now(join_at_once);
}

bool name_has(const char* path, const char* part) {
  const char* base = path;
  for (const char* c = path; *c; c++)
    if (*c == '/') base = c + 1;
  for (const char* c = base; *c; c++)
    if (str_starts(c, part)) return true;
  return false;
}

int note_object(struct dl_phdr_info* info, size_t, void* probes_void) {
  const auto* probes = static_cast<const uintptr_t*>(probes_void);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  const bool libc = name_has(name, "libc.so");
  bool unsafe = libc || name_has(name, "ld-linux") || name_has(name, "malloc");
  for (int i = 0; i < info->dlpi_phnum && !unsafe; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr, end = begin + ph.p_memsz;
    for (int p = 0; probes[p] != 0; p++)
      if (probes[p] >= begin && probes[p] < end) unsafe = true;
  }
  for (int i = 0; i < info->dlpi_phnum && unsafe && g_range_count < kMaxRanges; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    g_ranges[g_range_count++] = {begin, begin + ph.p_memsz, libc};
  }
  return 0;
}

// Once per program image (a fork child has its parent's).
void note_unsafe_code() {
  if (g_ranges_noted) return;
  g_ranges_noted = true;
  // The runtime itself, and the malloc behind it (a preloaded allocator's, else libc's).
  uintptr_t probes[] = {reinterpret_cast<uintptr_t>(&note_unsafe_code),
                        reinterpret_cast<uintptr_t>(resolve_next_definition("malloc")), 0};
  if (probes[1] == 0) probes[1] = probes[0];
  dl_iterate_phdr(note_object, probes);
}

const CodeRange* range_of(uintptr_t ip) {
  for (uint32_t i = 0; i < g_range_count; i++)
    if (ip >= g_ranges[i].begin && ip < g_ranges[i].end) return &g_ranges[i];
  return nullptr;
}

uint64_t mask_without_checkpoint_signal(uint64_t mask) {
  return mask & ~(1ull << (g_config.checkpoint_signal - 1));
}

bool safe_to_start_thread(const ucontext_t* uc) {
  const auto& regs = uc->uc_mcontext.gregs;
  const auto ip = static_cast<uintptr_t>(regs[REG_RIP]);
  stack_t alternate = {};
  if (STASIS_SYS2(SYS_sigaltstack, nullptr, &alternate) == 0 && (alternate.ss_flags & SS_ONSTACK))
    return false;  // only handlers run on the alternate stack
  const CodeRange* range = range_of(ip);
  if (range != nullptr) {
    if (!range->libc) return false;
    // Blocked in a system call of libc's, to be made again when the handler returns (the kernel
    // rewound to the instruction, its number in rax), or broken off with EINTR.
    const long ax = regs[REG_RAX];
    if ((ip & 4095) <= 4094 && *reinterpret_cast<const uint16_t*>(ip) == 0x050f)
      return ax != SYS_mmap && ax != SYS_munmap && ax != SYS_mprotect && ax != SYS_brk &&
             ax != SYS_mremap && ax != SYS_madvise;
    return (ip & 4095) >= 2 && *reinterpret_cast<const uint16_t*>(ip - 2) == 0x050f && ax == -EINTR;
  }
  // The program's own code, or a library's: not inside one of the program's signal handlers,
  // which may have interrupted malloc (the mask is then not the one the program set).
  uint64_t mask;
  __builtin_memcpy(&mask, &uc->uc_sigmask, sizeof mask);
  return mask_without_checkpoint_signal(mask) == g_program_mask;
}

uint32_t threads_of(const char* status) {
  for (const char* line = status; *line;) {
    if (str_starts(line, "Threads:")) {
      uint32_t n = 0;
      for (const char* c = line + 8; *c == ' ' || *c == '\t' || (*c >= '0' && *c <= '9'); c++)
        if (*c >= '0' && *c <= '9') n = n * 10 + static_cast<uint32_t>(*c - '0');
      return n;
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return 0;
}

// Whether the process has the checkpoint signal's handler and, with `threads`, how many threads.
bool catches_checkpoint_signal(long pid, uint32_t* threads) {
  static char status[4096];  // the checkpoint thread's (children) or the constructor's: one at a time
  char path[48] = "/proc/";
  format_uint(path + 6, static_cast<unsigned long>(pid));
  str_copy(path + str_len(path), "/status", 10);
  if (read_small_file(path, status, sizeof status) <= 0) return false;
  if (threads) *threads = threads_of(status);
  const int sig = g_config.checkpoint_signal;
  return sig > 0 && (parse_status_hex(status, "SigCgt") & (1ull << (sig - 1))) != 0;
}

}  // namespace

void note_program_signal_mask() {
  uint64_t mask = 0;
  if (STASIS_SYS4(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &mask, sizeof mask) == 0)
    g_program_mask = mask_without_checkpoint_signal(mask);
}

bool parent_runs_stasis(long ppid) { return ppid > 1 && catches_checkpoint_signal(ppid, nullptr); }

bool defer_checkpoint_thread(long parent_at_start) {
  prepare_checkpoint_thread();
  note_unsafe_code();
  note_program_signal_mask();
  g_deferred_parent = parent_at_start;
  g_retry_timer = -1;  // a timer is not inherited by a fork child
  g_thread_deferred.store(true);
  // An orphan is listed by no member: the parent's end must start the thread.
  STASIS_SYS2(SYS_prctl, PR_SET_PDEATHSIG, g_config.checkpoint_signal);
  if (STASIS_SYS0(SYS_getppid) == parent_at_start) return true;
  g_thread_deferred.store(false);  // the parent is already gone
  return false;
}

void start_deferred_checkpoint_thread(bool join_at_once) {
  // A load first: the pthread_create wrapper calls this at every thread the program starts.
  if (!g_thread_deferred.load(std::memory_order_relaxed) || !g_thread_deferred.exchange(false)) return;
  start_now(join_at_once);
}

bool checkpoint_signal_before_thread(const ucontext_t* uc) {
  if (!g_thread_deferred.load()) return false;
  if (safe_to_start_thread(uc)) {
    if (g_thread_deferred.exchange(false)) start_now(true);
  } else if (STASIS_SYS0(SYS_getppid) != g_deferred_parent) {
    signal_again_soon();  // orphaned
  }
  count_checkpoint_interruption(uc);  // a call the signal broke off is made again
  return true;
}

// Signalled only while it shows the handler: a child that execs meanwhile has the checkpoint
// signal ignored from before its exec until its new runtime's handler is in place (enter_exec),
// a vfork or posix_spawn child (which shares this process's memory until it execs, and resets
// its handlers) is not signalled at all, and the pid descriptor keeps the signal from reaching
// another process that took the pid of one that ended.
void signal_threadless_children(const uint32_t* pids, uint32_t count, int signal) {
  const long self = sys_getpid();
  for (uint32_t i = 0; i < count; i++) {
    long pidfd = STASIS_SYS2(SYS_pidfd_open, pids[i], 0);
    uint32_t threads = 0;
    if (catches_checkpoint_signal(pids[i], &threads) && threads == 1 &&
        STASIS_SYS5(SYS_kcmp, self, pids[i], KCMP_VM, 0, 0) != 0) {
      if (pidfd >= 0) STASIS_SYS4(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
      else STASIS_SYS2(SYS_kill, pids[i], signal);
    }
    if (pidfd >= 0) STASIS_SYS1(SYS_close, pidfd);
  }
}

}  // namespace stasis::rt
