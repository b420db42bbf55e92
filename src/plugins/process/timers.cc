// POSIX timers and clock offsets (see timers.h), and the thin libc wrappers that apply a clock
// offset after a restart that needed one. Without an offset each wrapper costs one predictable
// branch on top of the call it forwards.
#include "plugins/process/timers.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include "plugins/process/process_state.h"
#include "runtime/rt.h"

namespace stasis::rt {
namespace {

// prctl(2) since Linux 6.17: while on, timer_create() takes the id to create from *timer_id.
constexpr int kPrTimerCreateRestoreIds = 77;
constexpr int kRestoreIdsOff = 0, kRestoreIdsOn = 1, kRestoreIdsGet = 2;
// glibc runs SIGEV_THREAD timers by signalling its internal helper thread with SIGTIMER (32).
constexpr int kGlibcTimerSignal = 32;
constexpr int64_t kNsPerSecond = 1000000000;

int64_t to_ns(const timespec& ts) { return ts.tv_sec * kNsPerSecond + ts.tv_nsec; }
// Times before the clock's origin become the origin (an absolute time there has passed anyway).
timespec to_timespec(int64_t ns) {
  if (ns < 0) ns = 0;
  return {ns / kNsPerSecond, ns % kNsPerSecond};
}

int64_t kernel_clock_ns(clockid_t clock) {
  timespec ts = {};
  STASIS_SYS2(SYS_clock_gettime, clock, &ts);
  return to_ns(ts);
}

long parse_decimal(const char*& p) {
  bool negative = *p == '-';
  if (negative) p++;
  long v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  return negative ? -v : v;
}

// Calls visit(timer) for every entry of a /proc/PID/timers text ("ID: 3\nsignal: 34/<sigev_value
// in hex>\nnotify: signal/tid.1234\nClockID: 1\n" per timer); only the notification fields, the
// id and the clock are filled in.
template <typename Visit>
void parse_timers(const char* text, Visit visit) {
  StasisPosixTimer timer = {};
  bool open = false;
  for (const char* line = text; *line;) {
    const char* p = line;
    if (str_starts(p, "ID: ")) {
      if (open) visit(timer);
      timer = {};
      open = true;
      p += 4;
      timer.id = static_cast<int32_t>(parse_decimal(p));
    } else if (str_starts(p, "signal: ")) {
      p += 8;
      timer.signo = static_cast<int32_t>(parse_decimal(p));
      if (*p == '/') timer.value = parse_hex(++p);
    } else if (str_starts(p, "notify: ")) {
      p += 8;
      timer.notify = str_starts(p, "none") ? SIGEV_NONE : str_starts(p, "thread") ? SIGEV_THREAD : SIGEV_SIGNAL;
      while (*p && *p != '/' && *p != '\n') p++;
      if (str_starts(p, "/tid.")) timer.notify |= SIGEV_THREAD_ID;
      if (*p == '/') p += 5;
      timer.target_tid = static_cast<uint32_t>(parse_decimal(p));
    } else if (str_starts(p, "ClockID: ")) {
      p += 9;
      timer.clock = static_cast<int32_t>(parse_decimal(p));
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  if (open) visit(timer);
}

// Clocks a timer can be recreated on: CPU clocks of particular threads or processes (including
// CLOCK_THREAD_CPUTIME_ID, bound to the thread that created the timer) cannot be.
bool clock_is_restorable(int32_t clock) {
  switch (clock) {
    case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_PROCESS_CPUTIME_ID: case CLOCK_BOOTTIME:
    case CLOCK_REALTIME_ALARM: case CLOCK_BOOTTIME_ALARM: case CLOCK_TAI:
      return true;
    default:
      return false;
  }
}

// ---- clock offsets ------------------------------------------------------------------------------
// Non-zero only after a restart where a clock was behind the value the program last saw. Written
// by the checkpoint thread while every user thread is stopped.
constinit bool g_clock_offset_active = false;
constinit int64_t g_monotonic_offset_ns = 0;
constinit int64_t g_boottime_offset_ns = 0;

int64_t offset_of(clockid_t clock) {
  switch (clock) {
    case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW: case CLOCK_MONOTONIC_COARSE:
      return g_monotonic_offset_ns;
    case CLOCK_BOOTTIME: case CLOCK_BOOTTIME_ALARM:
      return g_boottime_offset_ns;
    default:
      return 0;
  }
}


StasisSavedClocks program_clocks_now() {
  return {kernel_clock_ns(CLOCK_MONOTONIC) + g_monotonic_offset_ns,
          kernel_clock_ns(CLOCK_MONOTONIC_RAW) + g_monotonic_offset_ns,
          kernel_clock_ns(CLOCK_BOOTTIME) + g_boottime_offset_ns};
}

// --clock=continue: the program's clocks resume from the values saved at the checkpoint, so the
// offsets are whatever separates those from the kernel's clocks now (negative on the same boot,
// where the kernel's went on while the image waited). Monotonic and raw time share one offset,
// as they do for a clock that is behind; boot time keeps its own, so it still never trails
// monotonic time (it did not at the checkpoint).
void continue_clocks(const StasisSavedClocks& saved) {
  g_monotonic_offset_ns = saved.monotonic_ns - kernel_clock_ns(CLOCK_MONOTONIC);
  g_boottime_offset_ns = saved.boottime_ns - kernel_clock_ns(CLOCK_BOOTTIME);
  g_clock_offset_active = g_monotonic_offset_ns != 0 || g_boottime_offset_ns != 0;
  LogLine line;
  (line << "--clock=continue: the program's monotonic clocks resume from the checkpoint's, "
        << -g_monotonic_offset_ns << " ns (monotonic) and " << -g_boottime_offset_ns
        << " ns (boot time) behind the kernel's")
      .emit();
}

void restore_clock_offsets(const StasisSavedClocks& saved, int64_t shift_ns) {
  auto behind = [shift_ns](int64_t saved_ns, clockid_t clock) {
    int64_t gap = saved_ns + shift_ns - kernel_clock_ns(clock);
    return gap > 0 ? gap : 0;
  };
  int64_t monotonic = behind(saved.monotonic_ns, CLOCK_MONOTONIC);
  int64_t raw = behind(saved.monotonic_raw_ns, CLOCK_MONOTONIC_RAW);
  g_monotonic_offset_ns = monotonic > raw ? monotonic : raw;
  int64_t boottime = behind(saved.boottime_ns, CLOCK_BOOTTIME);
  // Boot time never trails monotonic time (it only adds time spent suspended): keep it so.
  g_boottime_offset_ns = boottime > g_monotonic_offset_ns ? boottime : g_monotonic_offset_ns;
  g_clock_offset_active = g_monotonic_offset_ns != 0 || g_boottime_offset_ns != 0;
  if (g_clock_offset_active) {
    LogLine line;
    (line << "the monotonic clock is behind the checkpoint's; the program's clocks run "
          << g_monotonic_offset_ns << " ns (monotonic) and " << g_boottime_offset_ns
          << " ns (boot time) ahead of the kernel's")
        .emit();
  }
}

// ---- overruns --------------------------------------------------------------------------------
// timer_getoverrun() reports the overruns of a timer's last delivered expiry, which the kernel
// cannot be told: the runtime answers the saved count until the recreated timer expires or is
// set again.
struct SavedOverrun {
  int32_t id;
  int32_t overrun;
  clockid_t clock;
  int64_t first_expiry_ns;  // on `clock`, kernel time; INT64_MAX while disarmed
};
constinit SavedOverrun g_saved_overruns[STASIS_MAX_POSIX_TIMERS];
constinit uint32_t g_saved_overrun_count = 0;

SavedOverrun* saved_overrun_of(int id) {
  for (uint32_t i = 0; i < g_saved_overrun_count; i++)
    if (g_saved_overruns[i].id == id) return &g_saved_overruns[i];
  return nullptr;
}

void forget_saved_overrun(int id) {
  if (SavedOverrun* entry = saved_overrun_of(id)) *entry = g_saved_overruns[--g_saved_overrun_count];
}

int program_overrun(int id, int kernel_overrun) {
  SavedOverrun* entry = saved_overrun_of(id);
  if (!entry) return kernel_overrun;
  if (kernel_clock_ns(entry->clock) < entry->first_expiry_ns) return entry->overrun;
  forget_saved_overrun(id);
  return kernel_overrun;
}

// ---- POSIX timers ------------------------------------------------------------------------------
// glibc's timer_t is the kernel's timer id for every notification but SIGEV_THREAD, whose
// timer_t is a pointer with the top bit set (refused at checkpoint time).
int kernel_timer_id(timer_t timer) {
  auto bits = reinterpret_cast<intptr_t>(timer);
  return bits >= 0 && bits <= INT32_MAX ? static_cast<int>(bits) : -1;
}

uint32_t read_timers(StasisPosixTimer* out, uint32_t cap, bool* complete) {
  static char text[16384];
  long len = read_small_file("/proc/self/timers", text, sizeof text);
  *complete = len >= 0 && static_cast<size_t>(len) < sizeof text - 1;
  uint32_t n = 0;
  if (len <= 0) return 0;
  parse_timers(text, [&](const StasisPosixTimer& timer) {
    if (n < cap) out[n] = timer;
    n++;
  });
  if (n > cap) *complete = false;
  return n < cap ? n : cap;
}

int32_t clock_of_timer(int id) {
  char text[8192];  // on the stack: any user thread may be setting a timer
  int32_t clock = -1;
  if (read_small_file("/proc/self/timers", text, sizeof text) > 0)
    parse_timers(text, [&](const StasisPosixTimer& timer) {
      if (timer.id == id) clock = timer.clock;
    });
  return clock;
}

void restore_timer(const StasisPosixTimer& saved) {
  struct sigevent event = {};
  event.sigev_notify = saved.notify;
  event.sigev_signo = saved.signo;
  event.sigev_value.sival_ptr = reinterpret_cast<void*>(saved.value);
  LogLine line;
  if (saved.notify & SIGEV_THREAD_ID) {
    long tid = restored_tid_of(saved.target_tid);
    if (tid == 0) {
      (line << "warning: POSIX timer " << saved.id << " signalled thread " << saved.target_tid
            << ", which was not restored; the timer is lost")
          .emit();
      return;
    }
    event._sigev_un._tid = static_cast<int>(tid);
  }
  int id = saved.id;
  long created = STASIS_SYS3(SYS_timer_create, saved.clock, &event, &id);
  if (created != 0 || id != saved.id) {
    (line << "warning: cannot recreate POSIX timer " << saved.id << " (errno " << -created
          << "); the timer is lost")
        .emit();
    return;
  }
  if (saved.value_ns) {
    itimerspec setting = {to_timespec(saved.interval_ns), to_timespec(saved.value_ns)};
    STASIS_SYS4(SYS_timer_settime, id, 0, &setting, nullptr);
  }
  if (saved.overrun > 0 && g_saved_overrun_count < STASIS_MAX_POSIX_TIMERS)
    g_saved_overruns[g_saved_overrun_count++] = {
        saved.id, saved.overrun, saved.clock,
        saved.value_ns ? kernel_clock_ns(saved.clock) + saved.value_ns : INT64_MAX};
}

void restore_posix_timers(const StasisPosixTimer* timers, uint32_t count) {
  g_saved_overrun_count = 0;
  if (count == 0) return;
  if (STASIS_SYS5(SYS_prctl, kPrTimerCreateRestoreIds, kRestoreIdsOn, 0, 0, 0) != 0) {
    LogLine line;
    (line << "warning: this kernel cannot recreate POSIX timers with their ids "
             "(PR_TIMER_CREATE_RESTORE_IDS); the program's " << count << " timer(s) are lost")
        .emit();
    return;
  }
  // The kernel hands out new ids after the last one restored: ending with the highest gives the
  // timers the program creates later the ids they would have had without the restart.
  uint32_t highest = 0;
  for (uint32_t i = 1; i < count; i++)
    if (timers[i].id > timers[highest].id) highest = i;
  for (uint32_t i = 0; i < count; i++)
    if (i != highest) restore_timer(timers[i]);
  restore_timer(timers[highest]);
  STASIS_SYS5(SYS_prctl, kPrTimerCreateRestoreIds, kRestoreIdsOff, 0, 0, 0);
}

}  // namespace

// (timers.h) An absolute time on `clock` as the program sees it -> as the kernel needs it.
const timespec* to_kernel_time(clockid_t clock, const timespec* program_time, timespec* scratch) {
  int64_t offset = offset_of(clock);
  if (!program_time || offset == 0) return program_time;
  *scratch = to_timespec(to_ns(*program_time) - offset);
  return scratch;
}

bool clock_offset_active() { return __builtin_expect(g_clock_offset_active, false); }

bool refuse_if_posix_timers(LogLine& error) {
  static StasisPosixTimer timers[STASIS_MAX_POSIX_TIMERS];
  bool complete = false;
  uint32_t count = read_timers(timers, STASIS_MAX_POSIX_TIMERS, &complete);
  if (!complete) {
    error << "the process has more than " << static_cast<unsigned>(STASIS_MAX_POSIX_TIMERS)
          << " POSIX timers (timer_create), more than this version can save; not checkpointing";
    return false;
  }
  if (count == 0) return true;
  if (STASIS_SYS5(SYS_prctl, kPrTimerCreateRestoreIds, kRestoreIdsGet, 0, 0, 0) < 0) {
    error << "the process has POSIX timers (timer id " << timers[0].id
          << "), which this kernel cannot recreate with their ids (prctl "
             "PR_TIMER_CREATE_RESTORE_IDS, Linux 6.17); not checkpointing";
    return false;
  }
  for (uint32_t i = 0; i < count; i++) {
    const StasisPosixTimer& t = timers[i];
    if ((t.notify & SIGEV_THREAD_ID) && t.signo == kGlibcTimerSignal) {
      error << "POSIX timer " << t.id << " (timer_create) notifies by running a function in a new "
               "thread (SIGEV_THREAD), which this version cannot restore; not checkpointing";
      return false;
    }
    if (!clock_is_restorable(t.clock)) {
      error << "POSIX timer " << t.id << " (timer_create) runs on clock " << t.clock
            << ", a CPU-time clock of one thread or process, which this version cannot restore; "
               "not checkpointing";
      return false;
    }
  }
  return true;
}

void capture_timers_and_clocks(StasisProcessRecord* rec) {
  bool complete = false;
  rec->posix_timer_count = read_timers(rec->posix_timers, STASIS_MAX_POSIX_TIMERS, &complete);
  for (uint32_t i = 0; i < rec->posix_timer_count; i++) {
    StasisPosixTimer& t = rec->posix_timers[i];
    itimerspec setting = {};
    STASIS_SYS2(SYS_timer_gettime, t.id, &setting);
    t.value_ns = to_ns(setting.it_value);
    t.interval_ns = to_ns(setting.it_interval);
    long overrun = STASIS_SYS1(SYS_timer_getoverrun, t.id);
    t.overrun = program_overrun(t.id, overrun > 0 ? static_cast<int>(overrun) : 0);
  }
  rec->clocks = program_clocks_now();
}

void restore_timers_and_clocks(const StasisProcessRecord* rec) {
  if (g_restart_info.clock_continue) continue_clocks(rec->clocks);
  else restore_clock_offsets(rec->clocks, g_restart_info.test_clock_shift_ns);
  restore_posix_timers(rec->posix_timers, rec->posix_timer_count);
}

}  // namespace stasis::rt

// ---- wrappers -------------------------------------------------------------------------------------
// Only absolute times need an offset: relative timeouts and remaining times (timer_gettime) are
// the same on both clocks. The timer descriptors' own
// wrapper is in src/plugins/events.
using namespace stasis::rt;

namespace {
using ClockGettimeFn = int (*)(clockid_t, timespec*);
using ClockNanosleepFn = int (*)(clockid_t, int, const timespec*, timespec*);
using TimerSettimeFn = int (*)(timer_t, int, const itimerspec*, itimerspec*);
using TimerGetoverrunFn = int (*)(timer_t);
using CondClockwaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
using SemClockwaitFn = int (*)(sem_t*, clockid_t, const timespec*);
using MutexClocklockFn = int (*)(pthread_mutex_t*, clockid_t, const timespec*);
using RwlockClocklockFn = int (*)(pthread_rwlock_t*, clockid_t, const timespec*);
ClockGettimeFn g_clock_gettime;
ClockNanosleepFn g_clock_nanosleep;
TimerSettimeFn g_timer_settime;
TimerGetoverrunFn g_timer_getoverrun;
CondClockwaitFn g_pthread_cond_clockwait;
SemClockwaitFn g_sem_clockwait;
MutexClocklockFn g_pthread_mutex_clocklock;
RwlockClocklockFn g_pthread_rwlock_clockrdlock, g_pthread_rwlock_clockwrlock;

// Each resolves on first call (next_symbol: a lock-free lookup, safe in a signal handler).

bool offset_active() { return clock_offset_active(); }
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int clock_gettime(clockid_t clock, timespec* now) {
  int r = next_symbol(g_clock_gettime, "clock_gettime")(clock, now);
  if (offset_active() && r == 0) *now = to_timespec(to_ns(*now) + offset_of(clock));
  return r;
}

__attribute__((visibility("default"))) int clock_nanosleep(clockid_t clock, int flags,
                                                           const timespec* request, timespec* remain) {
  timespec scratch;
  if (offset_active() && (flags & TIMER_ABSTIME)) request = to_kernel_time(clock, request, &scratch);
  return next_symbol(g_clock_nanosleep, "clock_nanosleep")(clock, flags, request, remain);
}

__attribute__((visibility("default"))) int timer_settime(timer_t timer, int flags,
                                                         const itimerspec* setting, itimerspec* old) {
  itimerspec adjusted;
  if (offset_active() && (flags & TIMER_ABSTIME) && setting) {
    adjusted = *setting;
    to_kernel_time(clock_of_timer(kernel_timer_id(timer)), &setting->it_value, &adjusted.it_value);
    setting = &adjusted;
  }
  if (__builtin_expect(g_saved_overrun_count != 0, false)) forget_saved_overrun(kernel_timer_id(timer));
  return next_symbol(g_timer_settime, "timer_settime")(timer, flags, setting, old);
}

__attribute__((visibility("default"))) int timer_getoverrun(timer_t timer) {
  int r = next_symbol(g_timer_getoverrun, "timer_getoverrun")(timer);
  if (__builtin_expect(g_saved_overrun_count != 0, false) && r >= 0)
    r = program_overrun(kernel_timer_id(timer), r);
  return r;
}

__attribute__((visibility("default"))) int pthread_cond_clockwait(pthread_cond_t* cond,
                                                                  pthread_mutex_t* mutex,
                                                                  clockid_t clock,
                                                                  const timespec* deadline) {
  timespec scratch;
  if (offset_active()) deadline = to_kernel_time(clock, deadline, &scratch);
  return next_symbol(g_pthread_cond_clockwait, "pthread_cond_clockwait")(cond, mutex, clock, deadline);
}

__attribute__((visibility("default"))) int sem_clockwait(sem_t* sem, clockid_t clock,
                                                         const timespec* deadline) {
  timespec scratch;
  if (offset_active()) deadline = to_kernel_time(clock, deadline, &scratch);
  return next_symbol(g_sem_clockwait, "sem_clockwait")(sem, clock, deadline);
}

__attribute__((visibility("default"))) int pthread_mutex_clocklock(pthread_mutex_t* mutex,
                                                                   clockid_t clock,
                                                                   const timespec* deadline) {
  timespec scratch;
  if (offset_active()) deadline = to_kernel_time(clock, deadline, &scratch);
  return next_symbol(g_pthread_mutex_clocklock, "pthread_mutex_clocklock")(mutex, clock, deadline);
}

__attribute__((visibility("default"))) int pthread_rwlock_clockrdlock(pthread_rwlock_t* lock,
                                                                      clockid_t clock,
                                                                      const timespec* deadline) {
  timespec scratch;
  if (offset_active()) deadline = to_kernel_time(clock, deadline, &scratch);
  return next_symbol(g_pthread_rwlock_clockrdlock, "pthread_rwlock_clockrdlock")(lock, clock, deadline);
}

__attribute__((visibility("default"))) int pthread_rwlock_clockwrlock(pthread_rwlock_t* lock,
                                                                      clockid_t clock,
                                                                      const timespec* deadline) {
  timespec scratch;
  if (offset_active()) deadline = to_kernel_time(clock, deadline, &scratch);
  return next_symbol(g_pthread_rwlock_clockwrlock, "pthread_rwlock_clockwrlock")(lock, clock, deadline);
}

}  // extern "C"
