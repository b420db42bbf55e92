#include "plugins/process/process_state.h"
#include "plugins/process/timers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>

namespace stasis::rt {
namespace {


}  // namespace

void capture_process_record(StasisProcessRecord* rec) {
  rec->pid = static_cast<uint32_t>(sys_getpid());
  rec->original_pid = g_config.original_pid;
  rec->ppid = static_cast<uint32_t>(virtual_pid_of(STASIS_SYS0(SYS_getppid)));
  rec->pgid = static_cast<uint32_t>(virtual_pid_of(STASIS_SYS1(SYS_getpgid, 0)));
  rec->sid = static_cast<uint32_t>(virtual_pid_of(STASIS_SYS1(SYS_getsid, 0)));
  rec->uid = static_cast<uint32_t>(STASIS_SYS0(SYS_getuid));
  rec->gid = static_cast<uint32_t>(STASIS_SYS0(SYS_getgid));
  rec->checkpoint_signal = static_cast<uint32_t>(g_config.checkpoint_signal);
  rec->generation = g_generation.load();
  rec->restart_info_addr = reinterpret_cast<uint64_t>(&g_restart_info);

  static char text[8192];
  if (read_small_file("/proc/self/status", text, sizeof text) > 0) {
    rec->shared_pending = parse_status_hex(text, "ShdPnd");
    // Umask is octal ("0022"); parse_status_hex reads it digit by digit in base 16, so convert.
    uint64_t as_hex = parse_status_hex(text, "Umask");
    rec->umask = static_cast<uint32_t>(((as_hex >> 8) & 7) * 64 + ((as_hex >> 4) & 7) * 8 + (as_hex & 7));
  }
  if (read_small_file("/proc/self/comm", text, sizeof text) > 0) {
    size_t n = str_len(text);
    if (n && text[n - 1] == '\n') text[n - 1] = 0;
    str_copy(rec->comm, text, sizeof rec->comm);
  }
  struct utsname uts;
  if (STASIS_SYS1(SYS_uname, &uts) == 0) str_copy(rec->hostname, uts.nodename, sizeof rec->hostname);
  long n = STASIS_SYS3(SYS_readlink, "/proc/self/cwd", rec->cwd, sizeof rec->cwd - 1);
  rec->cwd[n > 0 ? n : 0] = 0;
  n = STASIS_SYS3(SYS_readlink, "/proc/self/exe", rec->exe, sizeof rec->exe - 1);
  rec->exe[n > 0 ? n : 0] = 0;

  for (int sig = 1; sig <= 64; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      STASIS_SYS4(SYS_rt_sigaction, sig, nullptr, &rec->sigactions[sig - 1], 8);
  // Process-directed pending signals: the checkpoint thread blocks every signal, so its
  // sigtimedwait reaches only the process-wide queue.
  uint64_t shared = rec->shared_pending & ~(1ull << (g_config.checkpoint_signal - 1));
  rec->queued_count = collect_pending_signals(shared, false, rec->queued, STASIS_MAX_QUEUED_SHARED);
  for (int which = 0; which < 3; which++) {
    struct itimerval it;
    if (STASIS_SYS2(SYS_getitimer, which, &it) == 0)
      rec->itimers[which] = {it.it_interval.tv_sec, it.it_interval.tv_usec, it.it_value.tv_sec,
                             it.it_value.tv_usec};
  }
  for (int r = 0; r < 16; r++) {
    struct rlimit lim;
    if (STASIS_SYS4(SYS_prlimit64, 0, r, nullptr, &lim) == 0)
      rec->rlimits[r] = {lim.rlim_cur, lim.rlim_max};
  }

  StasisMmLayout& mm = rec->mm;
  if (const char* stat = read_proc_stat(0, text, sizeof text)) {
    mm.start_code = proc_stat_field(stat, 26);
    mm.end_code = proc_stat_field(stat, 27);
    mm.start_stack = proc_stat_field(stat, 28);
    mm.start_data = proc_stat_field(stat, 45);
    mm.end_data = proc_stat_field(stat, 46);
    mm.start_brk = proc_stat_field(stat, 47);
    mm.arg_start = proc_stat_field(stat, 48);
    mm.arg_end = proc_stat_field(stat, 49);
    mm.env_start = proc_stat_field(stat, 50);
    mm.env_end = proc_stat_field(stat, 51);
    rec->tty_nr = static_cast<uint32_t>(proc_stat_field(stat, 7));  // restored by restore_ptys.cc
    const long foreground = static_cast<long>(proc_stat_field(stat, 8));  // -1 (none) reads as 0
    rec->foreground_pgid = foreground > 0 ? static_cast<uint32_t>(virtual_pid_of(foreground)) : 0;
  }
  mm.brk = static_cast<uint64_t>(STASIS_SYS1(SYS_brk, 0));
  long fd = STASIS_SYS3(SYS_open, "/proc/self/auxv", O_RDONLY | O_CLOEXEC, 0);
  if (fd >= 0) {
    long got = STASIS_SYS3(SYS_read, fd, mm.auxv, sizeof mm.auxv);
    mm.auxv_words = got > 0 ? static_cast<uint32_t>(got / 8) : 0;
    STASIS_SYS1(SYS_close, fd);
  }
  capture_timers_and_clocks(rec);
}

void restore_process_record(const StasisProcessRecord* rec) {
  // /proc/self/exe names the loader until this succeeds (the loader could not: its own file was
  // still mapped). Changing it needs CAP_CHECKPOINT_RESTORE, so an unprivileged restart keeps
  // the loader there; everything else of the mm layout was already restored by the loader.
  long exe = STASIS_SYS3(SYS_open, rec->exe, O_RDONLY | O_CLOEXEC, 0);
  if (exe >= 0) {
    const StasisMmLayout& mm = rec->mm;
    struct prctl_mm_map map = {};
    map.start_code = mm.start_code, map.end_code = mm.end_code;
    map.start_data = mm.start_data, map.end_data = mm.end_data;
    map.start_brk = mm.start_brk, map.brk = static_cast<uint64_t>(STASIS_SYS1(SYS_brk, 0));
    map.start_stack = mm.start_stack, map.arg_start = mm.arg_start, map.arg_end = mm.arg_end;
    map.env_start = mm.env_start, map.env_end = mm.env_end;
    map.auxv = const_cast<__u64*>(reinterpret_cast<const __u64*>(mm.auxv));
    map.auxv_size = mm.auxv_words * 8;
    map.exe_fd = static_cast<uint32_t>(exe);
    STASIS_SYS5(SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, &map, sizeof map, 0);
    STASIS_SYS1(SYS_close, exe);
  }
  for (int sig = 1; sig <= 64; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      STASIS_SYS4(SYS_rt_sigaction, sig, &rec->sigactions[sig - 1], nullptr, 8);
  for (int which = 0; which < 3; which++) {
    const StasisItimer& t = rec->itimers[which];
    if (!t.value_sec && !t.value_usec) continue;
    struct itimerval it = {{t.interval_sec, t.interval_usec}, {t.value_sec, t.value_usec}};
    STASIS_SYS3(SYS_setitimer, which, &it, nullptr);
  }
  requeue_signals(rec->queued, rec->queued_count, 0);
  restore_timers_and_clocks(rec);
}

uint32_t collect_pending_signals(uint64_t mask, bool thread_only, StasisQueuedSignal* out,
                                 uint32_t cap) {
  mask &= ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1)));
  if (mask == 0) return 0;
  const long tid = sys_gettid();
  struct timespec zero = {0, 0};
  uint32_t n = 0;
  char status[2048];  // on the stack: several threads run this at once, in their handlers
  while (n < cap) {
    if (thread_only) {
      if (read_small_file("/proc/thread-self/status", status, sizeof status) <= 0) break;
      if ((parse_status_hex(status, "SigPnd") & mask) == 0) break;
    }
    long sig = STASIS_SYS4(SYS_rt_sigtimedwait, &mask, out[n].siginfo, &zero, 8);
    if (sig <= 0) break;
    n++;
  }
  if (n == cap) {
    LogLine line;
    (line << "warning: more than " << cap << " signals are queued; the rest are not saved").emit();
  }
  // Back in the queue, in the same order, so the running program is unaffected.
  requeue_signals(out, n, thread_only ? tid : 0);
  return n;
}

void requeue_signals(const StasisQueuedSignal* signals, uint32_t count, long tid) {
  const long pid = sys_getpid();
  for (uint32_t i = 0; i < count; i++) {
    const auto* info = reinterpret_cast<const siginfo_t*>(signals[i].siginfo);
    // The kernel lets only the main thread queue a siginfo that claims to come from the kernel or
    // from kill/tgkill (si_code >= 0, SI_TKILL); for those the plain signal is what matters.
    bool sendable = info->si_code < 0 && info->si_code != SI_TKILL;
    if (tid)
      sendable ? STASIS_SYS4(SYS_rt_tgsigqueueinfo, pid, tid, info->si_signo, info)
               : STASIS_SYS3(SYS_tgkill, pid, tid, info->si_signo);
    else
      sendable ? STASIS_SYS3(SYS_rt_sigqueueinfo, pid, info->si_signo, info)
               : STASIS_SYS2(SYS_kill, pid, info->si_signo);
  }
}

namespace {
// Calls visit(pid) for every child process (of every thread), in no particular order.
template <typename Visit>
void for_each_child(Visit visit) {
  static char children[16384];
  for_each_proc_number("/proc/self/task", [&](long, const char* tid, long) {
    char path[64] = "/proc/self/task/";
    str_copy(path + str_len(path), tid, 24);
    str_copy(path + str_len(path), "/children", 16);
    if (read_small_file(path, children, sizeof children) <= 0) return true;
    long pid = 0;
    for (const char* p = children;; p++) {
      if (*p >= '0' && *p <= '9') {
        pid = pid * 10 + (*p - '0');
        continue;
      }
      if (pid > 0) visit(pid);
      pid = 0;
      if (!*p) break;
    }
    return true;
  });
}

// The state letter of /proc/PID/stat ('Z' for a zombie), or 0 if the process is gone.
char process_state_letter(long pid) {
  static char stat[1024];
  const char* after_comm = read_proc_stat(pid, stat, sizeof stat);
  return after_comm ? proc_stat_state(after_comm) : 0;
}
}  // namespace

uint32_t live_children(uint32_t* out, uint32_t cap, long except_pid) {
  uint32_t n = 0;
  for_each_child([&](long pid) {
    if (pid == except_pid || n == cap) return;
    char state = process_state_letter(pid);
    if (state != 0 && state != 'Z' && state != 'X') out[n++] = static_cast<uint32_t>(pid);
  });
  return n;
}

bool capture_zombies(StasisProcessRecord* rec, long except_pid, LogLine& error) {
  bool ok = true;
  rec->zombie_count = 0;
  for_each_child([&](long pid) {
    if (!ok || pid == except_pid || process_state_letter(pid) != 'Z') return;
    if (rec->zombie_count == STASIS_MAX_ZOMBIES) {
      error << "more than " << STASIS_MAX_ZOMBIES << " exited children wait to be collected";
      ok = false;
      return;
    }
    siginfo_t info = {};
    // WNOWAIT: read the exit status and leave the zombie for the program's own wait().
    if (STASIS_SYS5(SYS_waitid, P_PID, pid, &info, WEXITED | WNOWAIT | __WALL, nullptr) != 0) return;
    int status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8
                                             : (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
    rec->zombies[rec->zombie_count++] = {static_cast<uint32_t>(virtual_pid_of(pid)), status};
  });
  return ok;
}

}  // namespace stasis::rt
