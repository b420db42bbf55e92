/* signal_flood: blocks a real-time signal and queues more of it (80) than a checkpoint saves
 * (64), then works; it never takes them, so its output does not depend on how many come back.
 * Every checkpoint of it makes the runtime warn about the signals it leaves out: a notice that
 * must reach the coordinator's log and `stasis checkpoint`, never this program's stdout/stderr.
 * usage: signal_flood [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <signal.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGRTMIN + 3);
  CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
  for (int i = 0; i < 80; i++) {
    union sigval value = {.sival_int = i};
    CHECK(sigqueue(getpid(), SIGRTMIN + 3, value) == 0);
  }
  uint64_t h = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    h = fnv1a(h, &step, sizeof step);
    printf("step %ld hash %016llx\n", step, (unsigned long long)h);
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
