// Interrupted calls: libc's functions whose system call the kernel never restarts after a signal
// handler (signal(7), "Interruption of system calls"), wrapped so that an interruption by the
// checkpoint signal, at a checkpoint or at a restart, is invisible: the call is issued again,
// with the time it had left. An EINTR the program would have had anyway (a signal of its own was
// delivered) is passed on unchanged. See interrupted_calls.h.
//
// Timeouts: select() gets its remaining time back from the kernel (Linux semantics, kept by
// glibc); nanosleep() through `rem`. The others take a relative timeout the kernel does not
// update, so when (and only when) it is positive the wrapper notes the coarse monotonic clock
// before the call (a few nanoseconds from the vdso) and issues the call again with what is left
// of it. The time between a checkpoint and a restart counts as elapsed, as it does on the
// program's own monotonic clock.
#include "runtime/interrupted_calls.h"

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"

namespace stasis::rt {

__thread uint32_t t_checkpoint_interruptions __attribute__((tls_model("initial-exec")));

void count_checkpoint_interruption(const ucontext_t* uc) {
  const auto& regs = uc->uc_mcontext.gregs;
  if (regs[REG_RAX] != -EINTR) return;
  // The frame must sit right after a `syscall` instruction (0f 05): otherwise another signal's
  // handler was entered first and the EINTR is the program's. The guard keeps the read within
  // the instruction's page.
  const auto ip = static_cast<uint64_t>(regs[REG_RIP]);
  if ((ip & 4095) < 2 || *reinterpret_cast<const uint16_t*>(ip - 2) != 0x050f) return;
  // A signal of the program pending and deliverable once the handler returns explains the
  // EINTR: its handler runs first, and the program must see the interruption.
  uint64_t pending = 0;
  if (STASIS_SYS2(SYS_rt_sigpending, &pending, sizeof pending) != 0) return;
  uint64_t blocked;
  __builtin_memcpy(&blocked, &uc->uc_sigmask, sizeof blocked);
  pending &= ~blocked & ~(1ull << (g_config.checkpoint_signal - 1));
  if (pending == 0) t_checkpoint_interruptions++;
}

}  // namespace stasis::rt

using namespace stasis::rt;

namespace {

using PollFn = int (*)(pollfd*, nfds_t, int);
using PollChkFn = int (*)(pollfd*, nfds_t, int, size_t);
using PpollFn = int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*);
using PpollChkFn = int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*, size_t);
using SelectFn = int (*)(int, fd_set*, fd_set*, fd_set*, timeval*);
using PselectFn = int (*)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
using EpollWaitFn = int (*)(int, epoll_event*, int, int);
using EpollPwaitFn = int (*)(int, epoll_event*, int, int, const sigset_t*);
using EpollPwait2Fn = int (*)(int, epoll_event*, int, const timespec*, const sigset_t*);
using PauseFn = int (*)();
using SigtimedwaitFn = int (*)(const sigset_t*, siginfo_t*, const timespec*);
using SigwaitinfoFn = int (*)(const sigset_t*, siginfo_t*);
using NanosleepFn = int (*)(const timespec*, timespec*);
using ClockGettimeFn = int (*)(clockid_t, timespec*);

PollFn g_poll;
PollChkFn g_poll_chk;
PpollFn g_ppoll;
PpollChkFn g_ppoll_chk;
SelectFn g_select;
PselectFn g_pselect;
EpollWaitFn g_epoll_wait;
EpollPwaitFn g_epoll_pwait;
EpollPwait2Fn g_epoll_pwait2;
PauseFn g_pause;
SigtimedwaitFn g_sigtimedwait;
SigwaitinfoFn g_sigwaitinfo;
NanosleepFn g_nanosleep;
ClockGettimeFn g_libc_clock_gettime;  // libc's: no clock offset needed for a difference
int64_t g_coarse_tick_ns = 4000000;

// The functions behind the wrappers resolve on first call (next_symbol).
__attribute__((constructor)) void note_coarse_clock_tick() {
  timespec tick;
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &tick) == 0)
    g_coarse_tick_ns = tick.tv_sec * 1000000000LL + tick.tv_nsec;
}

constexpr int64_t kNsPerMs = 1000000, kNsPerS = 1000000000;

int64_t coarse_now_ns() {
  timespec now;
  next_symbol(g_libc_clock_gettime, "clock_gettime")(CLOCK_MONOTONIC_COARSE, &now);
  return now.tv_sec * kNsPerS + now.tv_nsec;
}

// call(nullptr) issues the call as the program made it; after each interruption by the
// checkpoint signal, call(&left_ns) issues it again with what is left of its relative timeout
// (`timeout_ns`: none if negative). Only a positive timeout costs a clock reading. The coarse
// clock lags by up to one tick at each end, so one tick is added back: the call never waits less
// than it was asked to.
template <typename Call>
auto again_until_deadline(int64_t timeout_ns, Call call) {
  const int64_t started = timeout_ns > 0 ? coarse_now_ns() : 0;
  uint32_t seen = t_checkpoint_interruptions;
  auto r = call(static_cast<const int64_t*>(nullptr));
  if (__builtin_expect(r != -1, 1) || !interrupted_by_checkpoint(seen)) return r;
  for (;;) {
    int64_t left = timeout_ns;
    if (timeout_ns > 0) {
      left = timeout_ns - (coarse_now_ns() - started) + g_coarse_tick_ns;
      left = left < 0 ? 0 : left > timeout_ns ? timeout_ns : left;
    }
    seen = t_checkpoint_interruptions;
    r = call(&left);
    if (r != -1 || !interrupted_by_checkpoint(seen)) return r;
  }
}

int64_t ns_of(const timespec* ts) { return ts ? ts->tv_sec * kNsPerS + ts->tv_nsec : -1; }
int64_t ns_of_ms(int ms) { return ms < 0 ? -1 : ms * kNsPerMs; }
int ms_of(int64_t ns) { return ns < 0 ? -1 : static_cast<int>((ns + kNsPerMs - 1) / kNsPerMs); }

// The timeout to hand libc: the program's own, or what is left of it (`left`, from ns_of).
int ms_or_left(int ms, const int64_t* left) { return left ? ms_of(*left) : ms; }
const timespec* timespec_or_left(const timespec* original, const int64_t* left, timespec* out) {
  if (!left || !original) return original;
  *out = {static_cast<time_t>(*left / kNsPerS), static_cast<long>(*left % kNsPerS)};
  return out;
}

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))
}  // namespace

STASIS_EXPORT int poll(pollfd* fds, nfds_t n, int timeout_ms) {
  auto real = next_symbol(g_poll, "poll");
  return again_until_deadline(ns_of_ms(timeout_ms),
                              [&](const int64_t* left) { return real(fds, n, ms_or_left(timeout_ms, left)); });
}

// _FORTIFY_SOURCE builds call these instead of poll/ppoll.
STASIS_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout_ms, size_t fds_len) {
  auto real = next_symbol(g_poll_chk, "__poll_chk");
  return again_until_deadline(ns_of_ms(timeout_ms),
                              [&](const int64_t* left) { return real(fds, n, ms_or_left(timeout_ms, left), fds_len); });
}

STASIS_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  auto real = next_symbol(g_ppoll, "ppoll");
  return again_until_deadline(ns_of(timeout), [&](const int64_t* left) {
    timespec ts;
    return real(fds, n, timespec_or_left(timeout, left, &ts), mask);
  });
}

STASIS_EXPORT int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* timeout,
                              const sigset_t* mask, size_t fds_len) {
  auto real = next_symbol(g_ppoll_chk, "__ppoll_chk");
  return again_until_deadline(ns_of(timeout), [&](const int64_t* left) {
    timespec ts;
    return real(fds, n, timespec_or_left(timeout, left, &ts), mask, fds_len);
  });
}

// The kernel has already written the time left into *timeout (and left the sets untouched).
STASIS_EXPORT int select(int n, fd_set* in, fd_set* out, fd_set* except, timeval* timeout) {
  auto real = next_symbol(g_select, "select");
  return again_after_checkpoints([&] { return real(n, in, out, except, timeout); });
}

STASIS_EXPORT int pselect(int n, fd_set* in, fd_set* out, fd_set* except, const timespec* timeout,
                          const sigset_t* mask) {
  auto real = next_symbol(g_pselect, "pselect");
  return again_until_deadline(ns_of(timeout), [&](const int64_t* left) {
    timespec ts;
    return real(n, in, out, except, timespec_or_left(timeout, left, &ts), mask);
  });
}

STASIS_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout_ms) {
  auto real = next_symbol(g_epoll_wait, "epoll_wait");
  return again_until_deadline(ns_of_ms(timeout_ms),
                              [&](const int64_t* left) { return real(epfd, events, max, ms_or_left(timeout_ms, left)); });
}

STASIS_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout_ms,
                              const sigset_t* mask) {
  auto real = next_symbol(g_epoll_pwait, "epoll_pwait");
  return again_until_deadline(ns_of_ms(timeout_ms), [&](const int64_t* left) {
    return real(epfd, events, max, ms_or_left(timeout_ms, left), mask);
  });
}

STASIS_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* timeout,
                               const sigset_t* mask) {
  auto real = next_symbol(g_epoll_pwait2, "epoll_pwait2");
  return again_until_deadline(ns_of(timeout), [&](const int64_t* left) {
    timespec ts;
    return real(epfd, events, max, timespec_or_left(timeout, left, &ts), mask);
  });
}

STASIS_EXPORT int pause() {
  auto real = next_symbol(g_pause, "pause");
  return again_after_checkpoints([&] { return real(); });
}

STASIS_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
  auto real = next_symbol(g_sigtimedwait, "sigtimedwait");
  int sig = again_until_deadline(ns_of(timeout), [&](const int64_t* left) {
    timespec ts;
    return real(set, info, timespec_or_left(timeout, left, &ts));
  });
  if (sig > 0 && info) translate_siginfo_pid(info);  // the sender, as the program knows it
  return sig;
}

STASIS_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  auto real = next_symbol(g_sigwaitinfo, "sigwaitinfo");
  int sig = again_after_checkpoints([&] { return real(set, info); });
  if (sig > 0 && info) translate_siginfo_pid(info);
  return sig;
}

// Again with the remaining time the kernel wrote back (the time after a checkpoint that a
// restart skipped does not count here, as it does not for itimers).
STASIS_EXPORT int nanosleep(const timespec* request, timespec* remaining) {
  auto real = next_symbol(g_nanosleep, "nanosleep");
  timespec left_here;
  timespec* left = remaining ? remaining : &left_here;
  for (;;) {
    uint32_t seen = t_checkpoint_interruptions;
    int r = real(request, left);
    if (__builtin_expect(r != -1, 1) || !interrupted_by_checkpoint(seen)) return r;
    left_here = *left;
    request = &left_here;
    left = remaining ? remaining : &left_here;
  }
}
