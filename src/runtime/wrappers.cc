// Library-call wrappers that keep the checkpoint signal working: the program may not install a
// handler for it, nor block it; and _exit, which waits for the image being written. Everything
// else is forwarded untouched (one bit test per call).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include "runtime/interrupted_calls.h"
#include "runtime/rt.h"

using stasis::rt::g_config;
using stasis::rt::next_symbol;
using stasis::rt::program_handler;

namespace {
// libc's functions behind each wrapper, resolved on first call (next_symbol).
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using MaskFn = int (*)(int, const sigset_t*, sigset_t*);
using SuspendFn = int (*)(const sigset_t*);
SigactionFn g_sigaction;
SignalFn g_signal, g_sigset, g_bsd_signal, g_sysv_signal;
MaskFn g_sigprocmask, g_pthread_sigmask;
SuspendFn g_sigsuspend;

bool is_checkpoint_signal(int sig) { return sig != 0 && sig == g_config.checkpoint_signal; }

const sigset_t* without_checkpoint_signal(const sigset_t* set, sigset_t* copy) {
  if (set == nullptr || g_config.checkpoint_signal == 0 ||
      !sigismember(set, g_config.checkpoint_signal))
    return set;
  *copy = *set;
  sigdelset(copy, g_config.checkpoint_signal);
  return copy;
}
}  // namespace


int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  return next_symbol(g_sigaction, "sigaction")(sig, act, old);
}

extern "C" {

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                     struct sigaction* old) {
  if (is_checkpoint_signal(sig)) {  // reserved for Stasis: pretend the program owns a default
    if (old) {
      *old = {};
      old->sa_handler = SIG_DFL;
    }
    return 0;
  }
  if (stasis::rt::have_pid_table()) return stasis::rt::sigaction_translating_pids(sig, act, old);
  return real_sigaction(sig, act, old);
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  if (is_checkpoint_signal(sig)) return SIG_DFL;
  return program_handler(sig, next_symbol(g_signal, "signal")(sig, handler));
}

__attribute__((visibility("default"))) sighandler_t sigset(int sig, sighandler_t handler) {
  if (is_checkpoint_signal(sig)) return SIG_DFL;
  return program_handler(sig, next_symbol(g_sigset, "sigset")(sig, handler));
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler) {
  if (is_checkpoint_signal(sig)) return SIG_DFL;
  return program_handler(sig, next_symbol(g_bsd_signal, "bsd_signal")(sig, handler));
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler) {
  if (is_checkpoint_signal(sig)) return SIG_DFL;
  return program_handler(sig, next_symbol(g_sysv_signal, "sysv_signal")(sig, handler));
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t* set,
                                                       sigset_t* old) {
  sigset_t copy;
  int r = next_symbol(g_sigprocmask, "sigprocmask")(how, how == SIG_UNBLOCK ? set : without_checkpoint_signal(set, &copy), old);
  if (stasis::rt::g_thread_deferred.load(std::memory_order_relaxed)) stasis::rt::note_program_signal_mask();
  return r;
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t* set,
                                                           sigset_t* old) {
  sigset_t copy;
  int r = next_symbol(g_pthread_sigmask, "pthread_sigmask")(how, how == SIG_UNBLOCK ? set : without_checkpoint_signal(set, &copy), old);
  if (stasis::rt::g_thread_deferred.load(std::memory_order_relaxed)) stasis::rt::note_program_signal_mask();
  return r;
}

__attribute__((visibility("default"))) int sigsuspend(const sigset_t* mask) {
  sigset_t copy;
  const sigset_t* allowed = without_checkpoint_signal(mask, &copy);
  auto real = next_symbol(g_sigsuspend, "sigsuspend");
  return stasis::rt::again_after_checkpoints([&] { return real(allowed); });
}

// A process that starts threads of its own has its checkpoint thread first, started here in
// plain code (deferred_thread.cc): the signal that would start it later is safe only while the
// process has a single thread.
__attribute__((visibility("default"))) int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                                          void* (*start)(void*), void* arg) {
  static int (*real)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  stasis::rt::start_deferred_checkpoint_thread(false);
  return next_symbol(real, "pthread_create")(thread, attr, start, arg);
}

// The parent-death signal is the runtime's while the thread is deferred (an orphan starts it):
// a program that asks for its own gets it after the thread has started.
__attribute__((visibility("default"))) int prctl(int option, ...) {
  static int (*real)(int, ...);
  va_list args;
  va_start(args, option);
  unsigned long a2 = va_arg(args, unsigned long), a3 = va_arg(args, unsigned long),
                a4 = va_arg(args, unsigned long), a5 = va_arg(args, unsigned long);
  va_end(args);
  if (option == PR_SET_PDEATHSIG) stasis::rt::start_deferred_checkpoint_thread(false);
  return next_symbol(real, "prctl")(option, a2, a3, a4, a5);
}

// A process that ends while its forked writer still writes its image would fail the checkpoint
// (exit() waits in the runtime's atexit handler; _exit skips those handlers).
__attribute__((visibility("default"))) void _exit(int status) {
  static void (*real)(int);
  stasis::rt::prepare_to_end();
  next_symbol(real, "_exit")(status);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) void _Exit(int status) {
  static void (*real)(int);
  stasis::rt::prepare_to_end();
  next_symbol(real, "_Exit")(status);
  __builtin_unreachable();
}

}  // extern "C"
