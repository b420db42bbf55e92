// timerfd_settime with an absolute time (TFD_TIMER_ABSTIME) after a restart that gave the timer's
// clock an offset (src/plugins/process/timers.h): the program's deadline becomes the kernel's.
// Without an offset the wrapper is one predictable branch on top of the call it forwards.
#include <sys/timerfd.h>

#include "plugins/files/capture.h"
#include "plugins/process/timers.h"

namespace stasis::rt {
namespace {

using TimerfdSettimeFn = int (*)(int, int, const itimerspec*, itimerspec*);
TimerfdSettimeFn g_timerfd_settime;

// Resolved on first call (next_symbol: a lock-free lookup, safe in a signal handler).

// From fdinfo (its reader keeps to the stack: any user thread may be setting a timer).
int32_t clock_of_timerfd(int fd) {
  int32_t clock = -1;
  for_each_fdinfo_line(fd, [&](const char* line) {
    if (const char* p = fdinfo_field(line, "clockid:")) clock = static_cast<int32_t>(parse_decimal(p));
  });
  return clock;
}

}  // namespace
}  // namespace stasis::rt

using namespace stasis::rt;

extern "C" __attribute__((visibility("default"))) int timerfd_settime(int fd, int flags, const itimerspec* setting,
                                                                      itimerspec* old) {
  itimerspec adjusted;
  if (clock_offset_active() && (flags & TFD_TIMER_ABSTIME) && setting) {
    adjusted = *setting;
    to_kernel_time(clock_of_timerfd(fd), &setting->it_value, &adjusted.it_value);
    setting = &adjusted;
  }
  return next_symbol(g_timerfd_settime, "timerfd_settime")(fd, flags, setting, old);
}
