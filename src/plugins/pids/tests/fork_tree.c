/* fork_tree: a parent and two worker children joined by pipes, plus a child that exits at once
 * and stays a zombie until the end; the whole tree is checkpointed and restarted as a unit.
 * usage: fork_tree [STEPS=60] [DELAY_MS=50]
 * Each worker writes one value per step into its pipe; the parent prints both. At the end each
 * worker checks that getppid() and getpid() still give the pids it started with and exits with a
 * code the parent checks; the parent collects the zombie's status (7) by its pid. */
#include "target_common.h"

#include <sys/wait.h>
#include <unistd.h>

static void worker(int out, int index, long steps, long delay, pid_t parent, pid_t self) {
  uint64_t seed = 100 + (uint64_t)index;
  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed) % 1000000;
    if (write(out, &v, sizeof v) != sizeof v) _exit(90);
    sleep_ms(delay);
  }
  _exit(getppid() == parent && getpid() == self ? 10 + index : 80);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  pid_t parent = getpid();
  pid_t zombie = fork();
  CHECK(zombie >= 0);
  if (zombie == 0) _exit(7);
  int pipes[2][2];
  pid_t workers[2];
  for (int i = 0; i < 2; i++) {
    CHECK(pipe(pipes[i]) == 0);
    workers[i] = fork();
    CHECK(workers[i] >= 0);
    if (workers[i] == 0) {
      close(pipes[i][0]);
      worker(pipes[i][1], i, steps, delay, parent, getpid());
    }
    close(pipes[i][1]);
  }
  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t v[2];
    for (int i = 0; i < 2; i++) {
      size_t got = 0;
      while (got < sizeof v[i]) {
        ssize_t n = read(pipes[i][0], (char *)&v[i] + got, sizeof v[i] - got);
        CHECK(n > 0);
        got += (size_t)n;
      }
    }
    sum = fnv1a(sum, v, sizeof v);
    printf("step %ld a %llu b %llu\n", step, (unsigned long long)v[0], (unsigned long long)v[1]);
  }
  for (int i = 0; i < 2; i++) {
    int status = 0;
    CHECK(waitpid(workers[i], &status, 0) == workers[i]);
    printf("worker %d exit %d\n", i, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  int status = 0;
  CHECK(waitpid(zombie, &status, 0) == zombie);
  printf("zombie exit %d, pid unchanged %s, sum %016llx\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         getpid() == parent ? "yes" : "no", (unsigned long long)sum);
  return 0;
}
