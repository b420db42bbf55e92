// Calls every vdso function glibc uses, the way programs do (through glibc, which keeps the vdso
// entry points it found at start-up, or resolves time() and gettimeofday() straight to them), one
// round per step: a restart under another kernel must keep every one of them working.
// Usage: clock_calls STEPS DELAY_MS. Prints "step N ok" or what went wrong, then "done".
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static double seconds(struct timespec t) { return (double)t.tv_sec + t.tv_nsec / 1e9; }

static const char* one_round(void) {
  struct timespec mono1, mono2, real, res;
  struct timeval tv;
  if (clock_gettime(CLOCK_MONOTONIC, &mono1) != 0) return "clock_gettime(MONOTONIC) failed";
  if (clock_gettime(CLOCK_REALTIME, &real) != 0) return "clock_gettime(REALTIME) failed";
  if (gettimeofday(&tv, NULL) != 0) return "gettimeofday failed";
  time_t now = time(NULL);
  if (clock_getres(CLOCK_MONOTONIC, &res) != 0 || (res.tv_sec == 0 && res.tv_nsec == 0))
    return "clock_getres failed";
  if (sched_getcpu() < 0) return "sched_getcpu failed";
  if (clock_gettime(CLOCK_MONOTONIC, &mono2) != 0) return "clock_gettime(MONOTONIC) failed";
  if (seconds(mono2) < seconds(mono1)) return "CLOCK_MONOTONIC went back within one round";
  double wall = seconds(real), tod = (double)tv.tv_sec + tv.tv_usec / 1e6;
  if (tod - wall > 5 || wall - tod > 5) return "gettimeofday and CLOCK_REALTIME disagree";
  if ((double)now - wall > 5 || wall - (double)now > 5) return "time() and CLOCK_REALTIME disagree";
  if (wall < 1.5e9) return "CLOCK_REALTIME is before 2017";
  return NULL;
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 20;
  int delay_ms = argc > 2 ? atoi(argv[2]) : 100;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 1; i <= steps; i++) {
    for (int round = 0; round < 1000; round++) {
      const char* fault = one_round();
      if (fault) {
        printf("step %d: %s\n", i, fault);
        return 1;
      }
    }
    printf("step %d ok\n", i);
    struct timespec delay = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    nanosleep(&delay, NULL);
  }
  printf("done\n");
  return 0;
}
