#pragma once
#include "runtime/rt.h"

namespace stasis::rt {
// Process-wide state: ids, cwd, umask, rlimits, signal handlers and pending signals, itimers,
// the mm layout (heap break, argument/environment bounds, auxv). vdso layout is filled later by
// the memory plugin.
void capture_process_record(StasisProcessRecord* rec);
// After restart, in the checkpoint thread, before user threads run again.
void restore_process_record(const StasisProcessRecord* rec);
// Real pids of the live (not exited) children of every thread, except `except_pid`.
uint32_t live_children(uint32_t* out, uint32_t cap, long except_pid);
// Children that exited and wait to be collected: recorded (virtual pid, wait status) so restart
// recreates them as zombies. Fails only when there are too many.
bool capture_zombies(StasisProcessRecord* rec, long except_pid, LogLine& error);
// POSIX timers this version cannot recreate (defined in timers.cc): fills `error`, returns false.
bool refuse_if_posix_timers(LogLine& error);

// Pending signals are read by taking them off the calling thread's queue (sigtimedwait) and
// putting them straight back (rt_tgsigqueueinfo), which keeps their siginfo. `thread_only`:
// stop once the thread's own queue is empty instead of reaching into the process-wide one.
uint32_t collect_pending_signals(uint64_t mask, bool thread_only, StasisQueuedSignal* out,
                                 uint32_t cap);
// Queues saved signals again: to thread `tid` of this process, or to the process if tid is 0.
void requeue_signals(const StasisQueuedSignal* signals, uint32_t count, long tid);
}  // namespace stasis::rt
