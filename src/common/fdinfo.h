// The one reader of /proc/self/fdinfo/<fd> (the runtime's capture of events and locks, the
// event timers' settime wrapper, the InfiniBand plugin's epoll bookkeeping): raw system calls and a
// stack buffer, no malloc or stdio, because it runs while user threads are stopped and in
// wrappers that any thread may call.
#pragma once
#include <fcntl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

#include "common/raw_syscall.h"

namespace stasis {

// Calls fn(line) for each line of /proc/self/fdinfo/<fd>, without its newline. False if the
// file cannot be opened (no such descriptor).
template <typename Fn>
inline bool for_each_fdinfo_line(int fd, Fn&& fn) {
  char path[48] = "/proc/self/fdinfo/";
  char digits[12];
  int n = 0;
  unsigned long v = static_cast<unsigned long>(fd);
  do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) && n < 11);
  for (int i = 0; i < n; i++) path[18 + i] = digits[n - 1 - i];
  path[18 + n] = 0;
  long in = STASIS_SYS3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
  if (in < 0) return false;
  char buf[4096];
  size_t have = 0;
  for (;;) {
    long got = STASIS_SYS3(SYS_read, in, buf + have, sizeof buf - 1 - have);
    if (got == -EINTR) continue;
    if (got <= 0) break;
    have += static_cast<size_t>(got);
    size_t start = 0;
    for (size_t i = 0; i < have; i++)
      if (buf[i] == '\n') {
        buf[i] = 0;
        fn(static_cast<const char*>(buf + start));
        start = i + 1;
      }
    if (start == 0 && have == sizeof buf - 1) start = have;  // no line is this long: skip it
    __builtin_memmove(buf, buf + start, have - start);
    have -= start;
  }
  STASIS_SYS1(SYS_close, in);
  if (have) {
    buf[have] = 0;
    fn(static_cast<const char*>(buf));
  }
  return true;
}

// The text after "name" in `line` (where name starts the line or follows a blank), blanks
// skipped; nullptr if absent.
inline const char* fdinfo_field(const char* line, const char* name) {
  for (const char* p = line; *p; p++) {
    if (p != line && p[-1] != ' ' && p[-1] != '\t') continue;
    size_t i = 0;
    while (name[i] && p[i] == name[i]) i++;
    if (name[i]) continue;
    p += i;
    while (*p == ' ' || *p == '\t') p++;
    return p;
  }
  return nullptr;
}

}  // namespace stasis
