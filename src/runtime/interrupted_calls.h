// Calls the checkpoint signal must not interrupt in the program's eyes (interrupted_calls.cc).
//
// The kernel never restarts poll, select, epoll_wait, pause, sigsuspend, sigtimedwait... after a
// signal handler ran, SA_RESTART or not: they fail with EINTR. The checkpoint signal is a
// handler, so without help every checkpoint (and every restart) would hand those EINTRs to the
// program. The suspend handler counts, per thread, the system calls it interrupted with nothing
// else to report; a wrapper that sees EINTR and a changed count issues the call again.
#pragma once
#include <errno.h>
#include <stdint.h>
#include <ucontext.h>

namespace stasis::rt {

// Interruptions by the checkpoint signal of this thread, bumped by the suspend handler.
extern __thread uint32_t t_checkpoint_interruptions __attribute__((tls_model("initial-exec")));

// Called by the suspend handler as it returns (after a checkpoint, or in the restarted thread):
// when the thread it stopped was returning EINTR from a system call and no signal of the
// program is about to be delivered (whose handler would explain the EINTR), counts it.
void count_checkpoint_interruption(const ucontext_t* uc);

// The call failed, and only because the checkpoint signal interrupted it: issue it again.
inline bool interrupted_by_checkpoint(uint32_t seen) {
  return t_checkpoint_interruptions != seen && errno == EINTR;
}

// Runs call() until it ends for a reason of the program's own (the common path: one load of the
// counter and one branch on the result).
template <typename Call>
auto again_after_checkpoints(Call call) {
  for (;;) {
    uint32_t seen = t_checkpoint_interruptions;
    auto r = call();
    if (__builtin_expect(r != -1, 1) || !interrupted_by_checkpoint(seen)) return r;
  }
}

}  // namespace stasis::rt
