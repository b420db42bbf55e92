/* What the split mode's test programs share: loud checks that end the rank with status 2. */
#ifndef STASIS_SPLIT_TEST_COMMON_H
#define STASIS_SPLIT_TEST_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

/* A 64-bit mixer (splitmix64's finaliser): the test programs' data, a function of its seed only. */
static inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Sleeps `ms` milliseconds, resumed after a signal (a checkpoint interrupts it). */
static inline void sleep_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&pause, &pause) != 0) {
  }
}

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
      exit(2);                                                                    \
    }                                                                             \
  } while (0)
#define MPI_OK(call) CHECK((call) == MPI_SUCCESS)

#ifdef STASIS_SPLIT_CHECK_SIGNALS
#include <signal.h>
#include <string.h>
/* How many signals have a handler that lies in no executable mapping of this process (each said
 * on stderr): after a restart, a handler the old lower half installed points at memory that is
 * gone (README.md, Missing, signal handlers). */
static int stray_signal_handlers(void) {
  int stray = 0;
  for (int sig = 1; sig < 65; sig++) {
    struct sigaction action;
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &action) != 0) continue;
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) continue;
    unsigned long address = (unsigned long)action.sa_handler;
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int mapped = 0;
    while (maps && !mapped && fgets(line, sizeof line, maps)) {
      unsigned long start, end;
      char perms[8];
      if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && address >= start && address < end &&
          strchr(perms, 'x'))
        mapped = 1;
    }
    if (maps) fclose(maps);
    if (!mapped) {
      fprintf(stderr, "signal %d's handler %#lx is in no executable mapping\n", sig, address);
      stray++;
    }
  }
  return stray;
}
#endif

#endif
