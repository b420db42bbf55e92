// Threads: suspending every user thread for a checkpoint, capturing what the kernel knows about
// each thread, and re-creating that kernel state in the new threads after a restart.
//
// Each user thread is stopped by the checkpoint signal. Its handler records the thread's state,
// saves a resumable context (stasis_context_save) and parks on a futex. The interrupted register
// state (including FPU/xsave) stays in the kernel's signal frame on the thread's own stack, which
// is saved with the rest of memory; after a restart the loader resumes the context inside the
// handler, the handler re-registers the per-thread kernel state, and returning from the handler
// (rt_sigreturn) restores every register exactly as it was when the signal arrived.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <ucontext.h>

#include "plugins/process/process_state.h"
#include "runtime/interrupted_calls.h"
#include "runtime/rt.h"

extern "C" {
// glibc 2.35+: where the rseq area sits relative to the thread pointer, and its size.
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
}

namespace stasis::rt {
namespace {

constexpr uint32_t kRseqSignature = 0x53053053;  // glibc's RSEQ_SIG on x86
constexpr int kArchSetGs = 0x1001, kArchGetFs = 0x1003, kArchGetGs = 0x1004;

enum SlotState : uint32_t { kFree = 0, kSignalled = 1, kSuspended = 2, kRestored = 3 };

struct ThreadSlot {
  std::atomic<int32_t> tid;
  std::atomic<uint32_t> state;
  int32_t blocked_syscall;
  ucontext_t* ucontext;
  StasisThreadRecord record;
};

// constinit: no start-up loop may touch (and so populate) these megabytes in every program.
constinit ThreadSlot g_slots[STASIS_MAX_THREADS];
std::atomic<uint32_t> g_slot_high{0};         // slots [0, high) may be in use
std::atomic<uint32_t> g_suspended_count{0};   // futex: threads parked in the handler
std::atomic<uint32_t> g_restored_count{0};    // futex: threads that re-registered after restart
std::atomic<uint32_t> g_resume_sequence{0};   // futex: bumped to release parked threads
bool g_threads_suspended = false;

// Threads a plugin runs for a library it shuts down itself before the image is written (a verbs
// library's progress thread): never stopped, so the plugin can still drive and join them.
constexpr int kMaxExemptThreads = 64;
constinit std::atomic<int32_t> g_exempt_tids[kMaxExemptThreads];

bool is_exempt(int32_t tid) {
  for (auto& exempt : g_exempt_tids)
    if (exempt.load() == tid) return true;
  return false;
}

ThreadSlot* find_slot(int32_t tid) {
  uint32_t high = g_slot_high.load();
  for (uint32_t i = 0; i < high; i++)
    if (g_slots[i].tid.load() == tid) return &g_slots[i];
  return nullptr;
}

ThreadSlot* claim_slot(int32_t tid) {
  for (uint32_t i = 0; i < STASIS_MAX_THREADS; i++) {
    int32_t expected = 0;
    if (g_slots[i].tid.compare_exchange_strong(expected, tid)) {
      g_slots[i].state.store(kFree);
      uint32_t high = g_slot_high.load();
      while (high < i + 1 && !g_slot_high.compare_exchange_weak(high, i + 1)) {
      }
      return &g_slots[i];
    }
  }
  return nullptr;
}

void release_slot(ThreadSlot* slot) {
  slot->state.store(kFree);
  slot->tid.store(0);
}

// The syscall a thread is blocked in, from /proc/self/task/TID/syscall ("230 0x1 ..." or
// "running"); -1 if none. Needed because a syscall interrupted with ERESTART_RESTARTBLOCK
// (nanosleep, timed futex waits, poll) resumes through restart_syscall, whose state lives in the
// old kernel thread: after a restart we re-issue the original call instead.
int32_t blocked_syscall_of(int32_t tid) {
  char path[64] = "/proc/self/task/";
  format_uint(path + str_len(path), static_cast<unsigned long>(tid));
  str_copy(path + str_len(path), "/syscall", 16);
  char text[256];
  if (read_small_file(path, text, sizeof text) <= 0) return -1;
  if (text[0] < '0' || text[0] > '9') return -1;
  int32_t nr = 0;
  for (const char* p = text; *p >= '0' && *p <= '9'; p++) nr = nr * 10 + (*p - '0');
  return nr;
}

uint64_t thread_pending_signals(int32_t tid) {
  char path[64] = "/proc/self/task/";
  format_uint(path + str_len(path), static_cast<unsigned long>(tid));
  str_copy(path + str_len(path), "/status", 16);
  char text[4096];
  if (read_small_file(path, text, sizeof text) <= 0) return 0;
  return parse_status_hex(text, "SigPnd");
}

bool task_exists(int32_t tid) {
  char path[64] = "/proc/self/task/";
  format_uint(path + str_len(path), static_cast<unsigned long>(tid));
  return STASIS_SYS2(SYS_access, path, F_OK) == 0;
}

// A task of this process that is the kernel's, not the program's: a worker the kernel runs in
// the process's thread group (KVM's `kvm-nx-lpage-recovery` is a vhost_task, io_uring's io-wq
// workers are PF_IO_WORKER). Such a task never returns to user space, so it never runs a signal
// handler: waiting for it would stall the suspend until its timeout. It has no user state to
// save either; what owns it (the KVM or io_uring descriptor) is refused or saved by its kind.
// The flags are field 9 of /proc/TID/stat (the kernel's PF_* bits).
bool is_kernel_worker(int32_t tid) {
  constexpr uint64_t kPfIoWorker = 0x10, kPfUserWorker = 0x4000, kPfKthread = 0x200000;
  char stat[512];
  const char* after_comm = read_proc_stat(tid, stat, sizeof stat);
  return after_comm && (proc_stat_field(after_comm, 9) & (kPfIoWorker | kPfUserWorker | kPfKthread));
}

// Lists the threads of this process; returns the count written to tids.
uint32_t list_tasks(int32_t* tids, uint32_t cap) {
  uint32_t count = 0;
  for_each_proc_number("/proc/self/task", [&](long tid, const char*, long) {
    if (count < cap) tids[count++] = static_cast<int32_t>(tid);
    return true;
  });
  return count;
}

void capture_thread_state(StasisThreadRecord* rec, int32_t tid) {
  rec->tid = static_cast<uint32_t>(tid);
  rec->vtid = static_cast<uint32_t>(virtual_pid_of(tid));
  rec->is_leader = tid == sys_getpid();
  STASIS_SYS2(SYS_arch_prctl, kArchGetFs, &rec->fs_base);
  STASIS_SYS2(SYS_arch_prctl, kArchGetGs, &rec->gs_base);
  STASIS_SYS2(SYS_prctl, PR_GET_TID_ADDRESS, &rec->clear_child_tid);
  rec->tcb_tid_addr =
      g_config.tcb_tid_offset >= 0 ? rec->fs_base + static_cast<uint64_t>(g_config.tcb_tid_offset)
                                   : 0;
  size_t robust_len = 0;
  STASIS_SYS3(SYS_get_robust_list, 0, &rec->robust_list, &robust_len);
  rec->robust_list_len = robust_len;
  stack_t ss;
  if (STASIS_SYS2(SYS_sigaltstack, nullptr, &ss) == 0) {
    rec->altstack_sp = reinterpret_cast<uint64_t>(ss.ss_sp);
    rec->altstack_size = ss.ss_size;
    rec->altstack_flags = ss.ss_flags & ~SS_ONSTACK;
  }
  rec->rseq_addr = 0;
  if (&__rseq_size && &__rseq_offset && __rseq_size > 0) {
    uint64_t area = rec->fs_base + static_cast<uint64_t>(__rseq_offset);
    uint32_t len = __rseq_size < 32 ? 32 : __rseq_size;
    // Registering again with the same arguments answers EBUSY and changes nothing: a
    // non-destructive way to learn that glibc's area is the one registered for this thread.
    long r = STASIS_SYS4(SYS_rseq, area, len, 0, kRseqSignature);
    if (r == -EBUSY || r == 0) {
      rec->rseq_addr = area;
      rec->rseq_len = len;
      rec->rseq_sig = kRseqSignature;
    } else {
      LogLine line;
      (line << "warning: thread " << tid << " has an rseq area glibc did not register ("
            << r << "); it will not be re-registered after restart")
          .emit();
    }
  }
  STASIS_SYS2(SYS_prctl, PR_GET_NAME, rec->name);
  rec->nice = 20 - static_cast<int32_t>(STASIS_SYS2(SYS_getpriority, PRIO_PROCESS, 0));
}

void suspend_signal_handler(int, siginfo_t*, void* ucontext_void) {
  int saved_errno = errno;
  // A process without its checkpoint thread yet is asked to start it (deferred_thread.cc).
  if (checkpoint_signal_before_thread(static_cast<const ucontext_t*>(ucontext_void))) {
    errno = saved_errno;
    return;
  }
  ThreadSlot* slot = find_slot(static_cast<int32_t>(sys_gettid()));
  if (slot == nullptr || slot->state.load() != kSignalled) {
    errno = saved_errno;  // not ours to handle (e.g. a stray kill); ignore it
    return;
  }
  auto* uc = static_cast<ucontext_t*>(ucontext_void);
  uint32_t sequence = g_resume_sequence.load();
  slot->ucontext = uc;
  StasisThreadRecord* rec = &slot->record;
  capture_thread_state(rec, slot->tid.load());
  rec->blocked_syscall = slot->blocked_syscall;
  rec->sigmask = *reinterpret_cast<uint64_t*>(&uc->uc_sigmask);
  rec->is_checkpoint_thread = 0;
  rec->queued_count = collect_pending_signals(
      rec->pending & ~(1ull << (g_config.checkpoint_signal - 1)), true, rec->queued,
      STASIS_MAX_QUEUED_THREAD);

  if (stasis_context_save(&rec->context) == 0) {
    slot->state.store(kSuspended);
    g_suspended_count.fetch_add(1);
    futex_wake_all(&g_suspended_count);
  } else {
    // We are a new kernel thread made by the restart loader, inside the saved handler frame.
    restore_own_thread_state(rec);
    fit_frame_to_this_cpu(uc);
    auto& gregs = uc->uc_mcontext.gregs;
    if (gregs[REG_RAX] == SYS_restart_syscall && rec->blocked_syscall >= 0)
      gregs[REG_RAX] = rec->blocked_syscall;
    requeue_signals(rec->queued, rec->queued_count, sys_gettid());
    slot->tid.store(static_cast<int32_t>(sys_gettid()));
    slot->state.store(kRestored);
    g_restored_count.fetch_add(1);
    futex_wake_all(&g_restored_count);
  }
  while (g_resume_sequence.load() == sequence) futex_wait(&g_resume_sequence, sequence);
  count_checkpoint_interruption(uc);
  release_slot(slot);
  errno = saved_errno;
}

}  // namespace

void capture_own_thread_state(StasisThreadRecord* rec) {
  capture_thread_state(rec, static_cast<int32_t>(sys_gettid()));
  rec->blocked_syscall = -1;
  rec->is_checkpoint_thread = 1;
  STASIS_SYS4(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &rec->sigmask, 8);
}

namespace {
// (saved tid, new tid) of every thread restored, for the pid table (map_restored_tids).
struct RestoredTid { uint32_t saved, now; };
RestoredTid g_restored_tids[STASIS_MAX_THREADS];
std::atomic<uint32_t> g_restored_tid_count{0};
}  // namespace

void map_restored_tids() {
  uint32_t n = g_restored_tid_count.exchange(0);
  for (uint32_t i = 0; i < n && i < STASIS_MAX_THREADS; i++)
    map_pid(g_restored_tids[i].saved, g_restored_tids[i].now);
}

void restore_own_thread_state(const StasisThreadRecord* rec) {
  long tid = sys_gettid();
  uint32_t slot = g_restored_tid_count.fetch_add(1);
  if (slot < STASIS_MAX_THREADS) g_restored_tids[slot] = {rec->vtid ? rec->vtid : rec->tid, static_cast<uint32_t>(tid)};
  if (rec->tcb_tid_addr) *reinterpret_cast<int32_t*>(rec->tcb_tid_addr) = static_cast<int32_t>(tid);
  if (rec->gs_base) STASIS_SYS2(SYS_arch_prctl, kArchSetGs, rec->gs_base);
  if (rec->clear_child_tid) STASIS_SYS1(SYS_set_tid_address, rec->clear_child_tid);
  if (rec->robust_list) STASIS_SYS2(SYS_set_robust_list, rec->robust_list, rec->robust_list_len);
  if (!(rec->altstack_flags & SS_DISABLE) && rec->altstack_sp) {
    stack_t ss = {reinterpret_cast<void*>(rec->altstack_sp), rec->altstack_flags,
                  rec->altstack_size};
    STASIS_SYS2(SYS_sigaltstack, &ss, nullptr);
  }
  if (rec->rseq_addr) {
    long r = STASIS_SYS4(SYS_rseq, rec->rseq_addr, rec->rseq_len, 0, rec->rseq_sig);
    if (r != 0 && r != -EBUSY) {
      LogLine line;
      (line << "warning: could not re-register rseq for thread " << tid << " (" << r << ")").emit();
    }
  }
  STASIS_SYS2(SYS_prctl, PR_SET_NAME, rec->name);
  STASIS_SYS3(SYS_setpriority, PRIO_PROCESS, 0, rec->nice);  // lowering it needs privilege
}

void install_suspend_handler() {
  // Installed through libc's sigaction for its SA_RESTORER trampoline; every signal is blocked
  // while the handler runs so nothing interleaves with a suspended thread's bookkeeping.
  struct sigaction sa = {};
  sa.sa_sigaction = suspend_signal_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  ::real_sigaction(g_config.checkpoint_signal, &sa, nullptr);
}

bool suspend_user_threads(LogLine& error) {
  // Slots still held by threads leaving the previous checkpoint's handler must drain first.
  for (int spins = 0; spins < 5000; spins++) {
    bool busy = false;
    for (uint32_t i = 0; i < g_slot_high.load(); i++)
      if (g_slots[i].tid.load() != 0) busy = true;
    if (!busy) break;
    sleep_ns(1000000);
  }
  g_suspended_count.store(0);
  const int32_t self = static_cast<int32_t>(sys_gettid());
  const long pid = sys_getpid();
  static int32_t tids[STASIS_MAX_THREADS];
  uint32_t expected = 0;
  for (int round = 0;; round++) {
    uint32_t count = list_tasks(tids, STASIS_MAX_THREADS);
    uint32_t signalled_now = 0;
    for (uint32_t i = 0; i < count; i++) {
      if (tids[i] == self || find_slot(tids[i]) || is_exempt(tids[i]) || is_kernel_worker(tids[i]))
        continue;
      ThreadSlot* slot = claim_slot(tids[i]);
      if (!slot) {
        error << "more than " << STASIS_MAX_THREADS << " threads";
        return false;
      }
      slot->blocked_syscall = blocked_syscall_of(tids[i]);
      slot->record = {};
      slot->record.pending = thread_pending_signals(tids[i]);
      slot->state.store(kSignalled);
      if (STASIS_SYS3(SYS_tgkill, pid, tids[i], g_config.checkpoint_signal) != 0) {
        release_slot(slot);  // the thread exited meanwhile
        continue;
      }
      expected++;
      signalled_now++;
    }
    // Wait for every signalled thread; forget those that exited without taking the signal.
    for (int waits = 0;; waits++) {
      uint32_t done = g_suspended_count.load();
      if (done >= expected) break;
      futex_wait(&g_suspended_count, done, 50 * 1000000L);
      if (waits % 20 == 19) {
        for (uint32_t i = 0; i < g_slot_high.load(); i++) {
          ThreadSlot& s = g_slots[i];
          int32_t tid = s.tid.load();
          if (tid != 0 && s.state.load() == kSignalled && !task_exists(tid)) {
            release_slot(&s);
            expected--;
          }
        }
      }
      if (waits > 20 * 60 * 5) {
        error << "timed out waiting for " << (expected - g_suspended_count.load())
              << " thread(s) to stop (a thread blocking signal " << g_config.checkpoint_signal
              << " with a raw syscall?)";
        resume_user_threads();
        return false;
      }
    }
    if (signalled_now == 0 && round > 0) break;  // a full pass found no new thread
  }
  g_threads_suspended = true;
  return true;
}

uint32_t suspended_thread_records(StasisThreadRecord* out, uint32_t cap) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g_slot_high.load() && n < cap; i++)
    if (g_slots[i].tid.load() != 0 && g_slots[i].state.load() == kSuspended)
      out[n++] = g_slots[i].record;
  return n;
}

uint64_t suspended_threads_xfeatures_in_use(const StasisCpuStateRecord& layout) {
  uint64_t in_use = 0;
  for (uint32_t i = 0; i < g_slot_high.load(); i++)
    if (g_slots[i].tid.load() != 0 && g_slots[i].state.load() == kSuspended)
      in_use |= frame_xfeatures_in_use(g_slots[i].ucontext, layout);
  return in_use;
}

void resume_user_threads() {
  g_threads_suspended = false;
  g_resume_sequence.fetch_add(1);
  futex_wake_all(&g_resume_sequence);
}

bool threads_are_suspended() { return g_threads_suspended; }

void forget_parent_threads() {
  for (uint32_t i = 0; i < g_slot_high.load(); i++) release_slot(&g_slots[i]);  // only used slots:
  g_slot_high.store(0);  // touching the rest would populate megabytes in every child
  g_suspended_count.store(0);
  g_restored_count.store(0);
  g_threads_suspended = false;
}

long restored_tid_of(uint32_t saved_tid) {
  for (uint32_t i = 0; i < g_slot_high.load(); i++)
    if (g_slots[i].state.load() == kRestored && g_slots[i].record.tid == saved_tid)
      return g_slots[i].tid.load();
  return 0;
}

void wait_for_restored_threads() {
  uint32_t expected = 0;
  for (uint32_t i = 0; i < g_slot_high.load(); i++)
    if (g_slots[i].tid.load() != 0) expected++;
  for (;;) {
    uint32_t done = g_restored_count.load();
    if (done >= expected) break;
    futex_wait(&g_restored_count, done, 100 * 1000000L);
  }
  g_restored_count.store(0);
  g_threads_suspended = true;
}

}  // namespace stasis::rt

extern "C" __attribute__((visibility("default"))) int stasis_plugin_exempt_thread(int tid, int exempt) {
  using stasis::rt::g_exempt_tids;
  for (auto& slot : g_exempt_tids) {
    int32_t expected = exempt ? 0 : tid;
    if (slot.compare_exchange_strong(expected, exempt ? tid : 0)) return 0;
  }
  return -1;
}
