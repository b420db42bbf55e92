// System calls without libc: no errno (results are -errno), no locks, no cancellation points.
// Used by the restart loader (which has no libc) and on the runtime's checkpoint path.
#pragma once
#include <stdint.h>

static inline long stasis_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
  long ret;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#define STASIS_SYS0(n) stasis_syscall6((n), 0, 0, 0, 0, 0, 0)
#define STASIS_SYS1(n, a) stasis_syscall6((n), (long)(a), 0, 0, 0, 0, 0)
#define STASIS_SYS2(n, a, b) stasis_syscall6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define STASIS_SYS3(n, a, b, c) stasis_syscall6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define STASIS_SYS4(n, a, b, c, d) \
  stasis_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define STASIS_SYS5(n, a, b, c, d, e) \
  stasis_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define STASIS_SYS6(n, a, b, c, d, e, f) \
  stasis_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
