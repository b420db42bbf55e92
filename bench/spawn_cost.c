// Per-process start cost of the runtime, each variant alternating with the others every process
// (machine noise hits them alike). Started by bench/spawn_cost.py under `stasis launch`: it execs
// itself again without the runtime (so that its own forks cost every variant the same), then
// starts COMMAND ROUNDS times per variant: "plain" (no LD_PRELOAD) and each runtime library named,
// preloaded into COMMAND with the computation's environment. Prints one line a process:
// variant, wall nanoseconds (fork to reaped), CPU nanoseconds of the process tree (wait4's rusage).
//
// usage: spawn_cost ROUNDS LIBRARY[,LIBRARY...] COMMAND [ARG...]
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxVariants = 8 };

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: spawn_cost ROUNDS LIBRARY[,LIBRARY...] COMMAND [ARG...]\n");
    return 2;
  }
  if (getenv("LD_PRELOAD")) {  // under `stasis launch`: again, without the runtime
    unsetenv("LD_PRELOAD");
    execv("/proc/self/exe", argv);
    perror("spawn_cost: exec");
    return 1;
  }
  const int rounds = atoi(argv[1]);
  const char* variants[kMaxVariants] = {NULL};  // NULL: plain
  int variant_count = 1;
  for (char* library = strtok(argv[2], ","); library && variant_count < kMaxVariants;
       library = strtok(NULL, ","))
    variants[variant_count++] = library;
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < variant_count; k++) {
      const int v = (round + k) % variant_count;  // each variant first in turn
      const long long start = now_ns();
      pid_t child = fork();
      if (child == 0) {
        if (variants[v]) setenv("LD_PRELOAD", variants[v], 1);
        execv(argv[3], argv + 3);
        _exit(127);
      }
      int status = 0;
      struct rusage usage;
      if (child < 0 || wait4(child, &status, 0, &usage) != child) {
        perror("spawn_cost: fork/wait");
        return 1;
      }
      const long long wall = now_ns() - start;
      const long long cpu = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000LL +
                            (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000LL;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "spawn_cost: %s (variant %d) failed: status %d\n", argv[3], v, status);
        return 1;
      }
      printf("%d\t%lld\t%lld\n", v, wall, cpu);
    }
  }
  return 0;
}
