// Library-call wrappers that keep the checkpoint signal working: the program may not install a
// handler for it, nor block it. Everything else is forwarded untouched (one bit test per call).
#include <dlfcn.h>
#include <signal.h>

#include "runtime/rt.h"

using stasis::rt::g_config;

namespace {
template <typename Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

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
  using Fn = int (*)(int, const struct sigaction*, struct sigaction*);
  static Fn fn = next<Fn>("sigaction");
  return fn(sig, act, old);
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
  return real_sigaction(sig, act, old);
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  using Fn = sighandler_t (*)(int, sighandler_t);
  static Fn fn = next<Fn>("signal");
  return is_checkpoint_signal(sig) ? SIG_DFL : fn(sig, handler);
}

__attribute__((visibility("default"))) sighandler_t sigset(int sig, sighandler_t handler) {
  using Fn = sighandler_t (*)(int, sighandler_t);
  static Fn fn = next<Fn>("sigset");
  return is_checkpoint_signal(sig) ? SIG_DFL : fn(sig, handler);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler) {
  using Fn = sighandler_t (*)(int, sighandler_t);
  static Fn fn = next<Fn>("bsd_signal");
  return is_checkpoint_signal(sig) ? SIG_DFL : fn(sig, handler);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler) {
  using Fn = sighandler_t (*)(int, sighandler_t);
  static Fn fn = next<Fn>("sysv_signal");
  return is_checkpoint_signal(sig) ? SIG_DFL : fn(sig, handler);
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t* set,
                                                       sigset_t* old) {
  using Fn = int (*)(int, const sigset_t*, sigset_t*);
  static Fn fn = next<Fn>("sigprocmask");
  sigset_t copy;
  return fn(how, how == SIG_UNBLOCK ? set : without_checkpoint_signal(set, &copy), old);
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t* set,
                                                           sigset_t* old) {
  using Fn = int (*)(int, const sigset_t*, sigset_t*);
  static Fn fn = next<Fn>("pthread_sigmask");
  sigset_t copy;
  return fn(how, how == SIG_UNBLOCK ? set : without_checkpoint_signal(set, &copy), old);
}

__attribute__((visibility("default"))) int sigsuspend(const sigset_t* mask) {
  using Fn = int (*)(const sigset_t*);
  static Fn fn = next<Fn>("sigsuspend");
  sigset_t copy;
  return fn(without_checkpoint_signal(mask, &copy));
}

}  // extern "C"
