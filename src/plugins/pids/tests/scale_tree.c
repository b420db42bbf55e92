/* scale_tree: a parent and PROCESSES-1 children, each owning a little memory it keeps changing;
 * the scale test and bench/coordination_time.py checkpoint the whole tree at once.
 * usage: scale_tree [PROCESSES=16] [STEPS=60] [DELAY_MS=50] [MEMORY_KB=64]
 * The parent prints "step N" every DELAY_MS; every child rewrites its memory once per step and,
 * at the end, checks that the memory holds what its steps computed, that getppid() is still the
 * parent, and exits with a code that depends on its index and its memory. The parent prints each
 * child's exit code in order, so a child whose memory or parent changed across a restart shows. */
#include "target_common.h"

#include <sys/wait.h>
#include <unistd.h>

/* The memory after `steps` rounds, as one checksum: a child's memory is rewritten every step
 * from its own seed, so the checksum at the end depends only on the index and the step count. */
static uint64_t churn(uint64_t *memory, size_t words, uint64_t *seed) {
  uint64_t sum = FNV_INIT;
  for (size_t i = 0; i < words; i++) {
    memory[i] ^= splitmix64(seed);
    sum = fnv1a(sum, &memory[i], sizeof memory[i]);
  }
  return sum;
}

static void child(long index, long steps, long delay, size_t words, pid_t parent) {
  uint64_t *memory = calloc(words, sizeof *memory);
  uint64_t *expected = calloc(words, sizeof *expected);
  if (!memory || !expected) _exit(90);
  uint64_t seed = 1000 + (uint64_t)index, expected_seed = seed;
  uint64_t sum = 0;
  for (long step = 1; step <= steps; step++) {
    sum = churn(memory, words, &seed);
    sleep_ms(delay);
  }
  uint64_t expected_sum = 0;
  for (long step = 1; step <= steps; step++) expected_sum = churn(expected, words, &expected_seed);
  if (sum != expected_sum || memcmp(memory, expected, words * sizeof *memory) != 0) _exit(91);
  if (getppid() != parent) _exit(92);
  _exit((int)(10 + (index + sum) % 80));
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long processes = arg_long(argc, argv, 1, 16);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);
  size_t words = (size_t)arg_long(argc, argv, 4, 64) * 1024 / sizeof(uint64_t);
  CHECK(processes >= 1);
  pid_t parent = getpid();
  pid_t *children = calloc((size_t)processes, sizeof *children);
  CHECK(children != NULL);
  for (long i = 1; i < processes; i++) {
    children[i] = fork();
    CHECK(children[i] >= 0);
    if (children[i] == 0) child(i, steps, delay, words, parent);
  }
  printf("started %ld processes\n", processes);
  for (long step = 1; step <= steps; step++) {
    sleep_ms(delay);
    printf("step %ld\n", step);
  }
  for (long i = 1; i < processes; i++) {
    int status = 0;
    CHECK(waitpid(children[i], &status, 0) == children[i]);
    printf("child %ld exit %d\n", i, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  printf("done, pid unchanged %s\n", getpid() == parent ? "yes" : "no");
  return 0;
}
