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

// Resolved in a constructor (a wrapper may first run in a signal handler, where dlsym is not
// safe); a call before that resolves on the spot.
__attribute__((constructor)) void resolve_timerfd_settime() { next_symbol(g_timerfd_settime, "timerfd_settime"); }

// From fdinfo, read into a small buffer on the stack: any user thread may be setting a timer.
int32_t clock_of_timerfd(int fd) {
  char path[64] = "/proc/self/fdinfo/";
  format_uint(path + str_len(path), static_cast<unsigned long>(fd));
  char text[1024];
  if (read_small_file(path, text, sizeof text) <= 0) return -1;
  for (const char* line = text; *line;) {
    if (str_starts(line, "clockid:")) {
      const char* p = line + 8;
      while (*p == ' ' || *p == '\t') p++;
      return static_cast<int32_t>(parse_decimal(p));
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return -1;
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
