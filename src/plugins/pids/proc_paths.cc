// Pids inside /proc paths: after a restart, "/proc/<pid>/..." and "/proc/<pid>/task/<tid>/..."
// name the program's (virtual) pids; the calls that take a path get the real ones. Before the
// computation's first restart each wrapper is one test of the pid table in front of libc's
// function. "/proc/self" and "/proc/thread-self" need nothing; relative paths under a /proc
// directory descriptor and the contents of /proc files (which show real pids) are not translated.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/pids/pids.h"
#include "runtime/rt.h"

using namespace stasis::rt;

namespace {

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))

constexpr char kProc[] = "/proc/";
constexpr char kTask[] = "/task/";

// A run of digits at p (up to '/' or the end) as a number; nullptr when it is something else.
const char* parse_pid(const char* p, long* pid) {
  long value = 0;
  const char* start = p;
  for (; *p >= '0' && *p <= '9'; p++) value = value * 10 + (*p - '0');
  if (p == start || p - start > 9 || (*p != 0 && *p != '/')) return nullptr;
  *pid = value;
  return p;
}

bool append(char* buf, size_t cap, size_t* len, const char* text, size_t n) {
  if (*len + n >= cap) return false;
  __builtin_memcpy(buf + *len, text, n);
  *len += n;
  buf[*len] = 0;
  return true;
}

bool append_number(char* buf, size_t cap, size_t* len, long value) {
  char digits[24];
  format_uint(digits, static_cast<unsigned long>(value));
  return append(buf, cap, len, digits, str_len(digits));
}

// `path` with its virtual pid (and task id) replaced by the real ones, in buf; `path` itself when
// it names no pid or nothing changes.
const char* real_proc_path(const char* path, char* buf, size_t cap) {
  if (!path || !str_starts(path, kProc)) return path;
  long pid = 0, tid = 0;
  const char* rest = parse_pid(path + sizeof kProc - 1, &pid);
  if (!rest) return path;
  const char* task = nullptr;
  if (str_starts(rest, kTask)) task = parse_pid(rest + sizeof kTask - 1, &tid);
  long real_pid = real_pid_of(pid), real_tid = task ? real_pid_of(tid) : 0;
  if (real_pid == pid && real_tid == tid) return path;
  size_t len = 0;
  buf[0] = 0;
  if (!append(buf, cap, &len, kProc, sizeof kProc - 1) || !append_number(buf, cap, &len, real_pid))
    return path;
  if (task) {
    if (!append(buf, cap, &len, kTask, sizeof kTask - 1) || !append_number(buf, cap, &len, real_tid))
      return path;
    rest = task;
  }
  return append(buf, cap, &len, rest, str_len(rest)) ? buf : path;
}

// Calls `call` with the real path; the buffer lives only on this (rare) path's stack.
template <typename Call>
__attribute__((noinline)) auto with_real_proc_path(const char* path, Call call) {
  char buf[PATH_MAX];
  return call(real_proc_path(path, buf, sizeof buf));
}

bool may_name_pid(const char* path) { return have_pid_table() && path && str_starts(path, kProc); }

// open's mode is there only when the flags create a file.
#define STASIS_OPEN_MODE(flags, last)   \
  mode_t mode = 0;                      \
  if ((flags) & (O_CREAT | O_TMPFILE)) { \
    va_list args;                       \
    va_start(args, last);               \
    mode = va_arg(args, mode_t);        \
    va_end(args);                       \
  }

}  // namespace

// Wrapper of `name` whose parameter `path` is a path: PARAMS as declared, ARGS as passed on.
#define STASIS_PROC_PATH_WRAPPER(ret, name, params, args)                                  \
  STASIS_EXPORT ret name params {                                                          \
    static ret(*real) params;                                                              \
    if (!may_name_pid(path)) return next_symbol(real, #name) args;                         \
    return with_real_proc_path(path, [&](const char* real_path) {                          \
      const char* path = real_path;                                                        \
      return next_symbol(real, #name) args;                                                \
    });                                                                                    \
  }

STASIS_EXPORT int open(const char* path, int flags, ...) {
  static int (*real)(const char*, int, ...);
  STASIS_OPEN_MODE(flags, flags)
  if (!may_name_pid(path)) return next_symbol(real, "open")(path, flags, mode);
  return with_real_proc_path(path, [&](const char* p) { return next_symbol(real, "open")(p, flags, mode); });
}

STASIS_EXPORT int open64(const char* path, int flags, ...) {
  static int (*real)(const char*, int, ...);
  STASIS_OPEN_MODE(flags, flags)
  if (!may_name_pid(path)) return next_symbol(real, "open64")(path, flags, mode);
  return with_real_proc_path(path, [&](const char* p) { return next_symbol(real, "open64")(p, flags, mode); });
}

STASIS_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  static int (*real)(int, const char*, int, ...);
  STASIS_OPEN_MODE(flags, flags)
  if (!may_name_pid(path)) return next_symbol(real, "openat")(dirfd, path, flags, mode);
  return with_real_proc_path(path, [&](const char* p) { return next_symbol(real, "openat")(dirfd, p, flags, mode); });
}

STASIS_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  static int (*real)(int, const char*, int, ...);
  STASIS_OPEN_MODE(flags, flags)
  if (!may_name_pid(path)) return next_symbol(real, "openat64")(dirfd, path, flags, mode);
  return with_real_proc_path(path, [&](const char* p) { return next_symbol(real, "openat64")(dirfd, p, flags, mode); });
}

// _FORTIFY_SOURCE's checked variants, which programs built with it call instead.
STASIS_PROC_PATH_WRAPPER(int, __open_2, (const char* path, int flags), (path, flags))
STASIS_PROC_PATH_WRAPPER(int, __open64_2, (const char* path, int flags), (path, flags))
STASIS_PROC_PATH_WRAPPER(int, __openat_2, (int dirfd, const char* path, int flags), (dirfd, path, flags))
STASIS_PROC_PATH_WRAPPER(int, __openat64_2, (int dirfd, const char* path, int flags), (dirfd, path, flags))
STASIS_PROC_PATH_WRAPPER(ssize_t, __readlink_chk, (const char* path, char* buf, size_t len, size_t buflen),
                         (path, buf, len, buflen))
STASIS_PROC_PATH_WRAPPER(ssize_t, __readlinkat_chk,
                         (int dirfd, const char* path, char* buf, size_t len, size_t buflen),
                         (dirfd, path, buf, len, buflen))

// stdio and dirent open through libc-internal calls that no wrapper sees.
STASIS_PROC_PATH_WRAPPER(FILE*, fopen, (const char* path, const char* mode), (path, mode))
STASIS_PROC_PATH_WRAPPER(FILE*, fopen64, (const char* path, const char* mode), (path, mode))
STASIS_PROC_PATH_WRAPPER(FILE*, freopen, (const char* path, const char* mode, FILE* stream), (path, mode, stream))
STASIS_PROC_PATH_WRAPPER(FILE*, freopen64, (const char* path, const char* mode, FILE* stream), (path, mode, stream))
STASIS_PROC_PATH_WRAPPER(DIR*, opendir, (const char* path), (path))

STASIS_PROC_PATH_WRAPPER(ssize_t, readlink, (const char* path, char* buf, size_t len), (path, buf, len))
STASIS_PROC_PATH_WRAPPER(ssize_t, readlinkat, (int dirfd, const char* path, char* buf, size_t len),
                         (dirfd, path, buf, len))

STASIS_PROC_PATH_WRAPPER(int, stat, (const char* path, struct stat* st), (path, st))
STASIS_PROC_PATH_WRAPPER(int, stat64, (const char* path, struct stat64* st), (path, st))
STASIS_PROC_PATH_WRAPPER(int, lstat, (const char* path, struct stat* st), (path, st))
STASIS_PROC_PATH_WRAPPER(int, lstat64, (const char* path, struct stat64* st), (path, st))
STASIS_PROC_PATH_WRAPPER(int, fstatat, (int dirfd, const char* path, struct stat* st, int flags),
                         (dirfd, path, st, flags))
STASIS_PROC_PATH_WRAPPER(int, fstatat64, (int dirfd, const char* path, struct stat64* st, int flags),
                         (dirfd, path, st, flags))
STASIS_PROC_PATH_WRAPPER(int, statx,
                         (int dirfd, const char* path, int flags, unsigned int mask, struct statx* st),
                         (dirfd, path, flags, mask, st))
// What binaries built against glibc before 2.33 call for stat/lstat/fstatat.
STASIS_PROC_PATH_WRAPPER(int, __xstat, (int version, const char* path, struct stat* st), (version, path, st))
STASIS_PROC_PATH_WRAPPER(int, __xstat64, (int version, const char* path, struct stat64* st), (version, path, st))
STASIS_PROC_PATH_WRAPPER(int, __lxstat, (int version, const char* path, struct stat* st), (version, path, st))
STASIS_PROC_PATH_WRAPPER(int, __lxstat64, (int version, const char* path, struct stat64* st), (version, path, st))
STASIS_PROC_PATH_WRAPPER(int, __fxstatat, (int version, int dirfd, const char* path, struct stat* st, int flags),
                         (version, dirfd, path, st, flags))
STASIS_PROC_PATH_WRAPPER(int, __fxstatat64,
                         (int version, int dirfd, const char* path, struct stat64* st, int flags),
                         (version, dirfd, path, st, flags))

STASIS_PROC_PATH_WRAPPER(int, access, (const char* path, int mode), (path, mode))
STASIS_PROC_PATH_WRAPPER(int, faccessat, (int dirfd, const char* path, int mode, int flags),
                         (dirfd, path, mode, flags))
