/* app_api: a program that uses the application API (include/stasis/stasis.h). It asks for a
 * checkpoint itself at step CKPT_STEP and does every update inside a critical section. stdout is
 * the same with or without Stasis; stderr reports what the API returned:
 *   "enabled N" at start, "checkpoint returned R" after its request (1 in the original run,
 *   2 when the call returns in a restarted process, -1 without Stasis).
 * usage: app_api [STEPS=40] [CKPT_STEP=10] [DELAY_MS=50] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stasis/stasis.h"

int main(int argc, char** argv) {
  long steps = argc > 1 ? atol(argv[1]) : 40;
  long ckpt_step = argc > 2 ? atol(argv[2]) : 10;
  long delay_ms = argc > 3 ? atol(argv[3]) : 50;
  setvbuf(stdout, NULL, _IOLBF, 0);
  fprintf(stderr, "enabled %d\n", stasis_is_enabled());
  uint64_t state = 88172645463325252ull;
  for (long step = 1; step <= steps; step++) {
    stasis_delay_checkpoints();
    for (int i = 0; i < 1000; i++) state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    stasis_allow_checkpoints();
    printf("step %ld state %llu\n", step, (unsigned long long)state);
    if (step == ckpt_step) fprintf(stderr, "checkpoint returned %d\n", stasis_checkpoint());
    struct timespec ts = {0, delay_ms * 1000000L};
    nanosleep(&ts, NULL);
  }
  printf("done %llu\n", (unsigned long long)state);
  return 0;
}
