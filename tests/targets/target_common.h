/* Helpers shared by the checkpoint test targets (the *.c files beside it).
 *
 * Every target is deterministic: its output depends only on its arguments, never on time, pids,
 * addresses or scheduling, so the driver can compare a checkpointed-and-restarted run with a
 * plain reference run byte for byte. Progress lines look like "step N ..." and are flushed one
 * by one (stdout is line buffered even when it is a file or a pipe). */
#ifndef STASIS_TEST_TARGET_COMMON_H
#define STASIS_TEST_TARGET_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
#define FNV_INIT 0xcbf29ce484222325ULL

/* Sleeps for ms milliseconds, resuming after EINTR with the time left (what a careful program
 * does; the output never depends on how long the sleep really took). */
static inline void sleep_ms(long ms) {
  struct timespec req = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&req, &req) == -1 && errno == EINTR) {
  }
}

static inline long arg_long(int argc, char **argv, int index, long fallback) {
  if (index < argc && argv[index][0] != '\0') {
    char *end = NULL;
    long v = strtol(argv[index], &end, 0);
    if (end && *end == '\0') return v;
    fprintf(stderr, "bad numeric argument %d: '%s'\n", index, argv[index]);
    exit(2);
  }
  return fallback;
}

/* Line-buffered stdout whatever it is connected to. */
static inline void line_buffered_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      printf("FAILED check %s at %s:%d (errno %d)\n", #cond, __FILE__,      \
             __LINE__, errno);                                              \
      fflush(stdout);                                                       \
      exit(99);                                                             \
    }                                                                       \
  } while (0)

/* Writes (writing != 0) or reads all `len` bytes through a descriptor, across short transfers and
 * EINTR; end of file or an error fails the program with CHECK's message. */
static inline void transfer_all(int fd, void *data, size_t len, int writing) {
  char *p = (char *)data;
  while (len) {
    ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    CHECK(n > 0);
    p += n;
    len -= (size_t)n;
  }
}

/* Now on `clock`, in nanoseconds; and a nanosecond count as a timespec (the clock targets). */
static inline int64_t clock_now_ns(clockid_t clock) {
  struct timespec ts;
  CHECK(clock_gettime(clock, &ts) == 0);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline struct timespec ns_timespec(int64_t ns) {
  struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
  return ts;
}

#endif
