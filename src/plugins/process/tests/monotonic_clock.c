/* monotonic_clock: CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME never go backwards, and
 * absolute waits on them keep their meaning, across a checkpoint and restart (also one where the
 * clocks at restart are behind the checkpoint's: `stasis restart` with STASIS_TEST_CLOCK_SHIFT_NS).
 * Every step checks, and prints as 0/1:
 *   mono/raw/boot  the clock did not go back since the previous step;
 *   rel            a relative sleep of DELAY/2 ms lasted at least that long on CLOCK_MONOTONIC;
 *   abs            clock_nanosleep(TIMER_ABSTIME) to now + DELAY/2 ms on CLOCK_MONOTONIC and on
 *                  CLOCK_BOOTTIME woke at or after the target;
 *   timer          a SIGEV_NONE timer armed with TIMER_ABSTIME at now + 10 s has at most 10 s left;
 *   cond           pthread_cond_clockwait(CLOCK_MONOTONIC, now + 5 ms) timed out after >= 5 ms.
 * Waking late is not checked: the time between checkpoint and restart (and the shift) passes
 * during the step the checkpoint interrupts. A deadline the runtime failed to translate would not
 * wake for an hour (the shift the tests use): the driver's timeout catches that.
 * usage: monotonic_clock [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <signal.h>

static const int64_t kSecond = 1000000000LL;

/* Sleeps until `target` on `clock`, again after EINTR (a checkpoint interrupts it); returns how
 * late it woke (negative: early). */
static int64_t sleep_until(clockid_t clock, int64_t target) {
  struct timespec ts = ns_timespec(target);
  int r;
  while ((r = clock_nanosleep(clock, TIMER_ABSTIME, &ts, NULL)) == EINTR) {
  }
  CHECK(r == 0);
  return clock_now_ns(clock) - target;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  const int64_t half = delay * 1000000LL / 2;

  timer_t timer;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_NONE;
  CHECK(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0);
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

  int64_t last_mono = clock_now_ns(CLOCK_MONOTONIC), last_raw = clock_now_ns(CLOCK_MONOTONIC_RAW);
  int64_t last_boot = clock_now_ns(CLOCK_BOOTTIME);
  for (long step = 1; step <= steps; step++) {
    int64_t mono = clock_now_ns(CLOCK_MONOTONIC), raw = clock_now_ns(CLOCK_MONOTONIC_RAW);
    int64_t boot = clock_now_ns(CLOCK_BOOTTIME);
    int mono_ok = mono >= last_mono, raw_ok = raw >= last_raw, boot_ok = boot >= last_boot;

    int64_t start = clock_now_ns(CLOCK_MONOTONIC);
    sleep_ms(delay / 2);
    int rel_ok = clock_now_ns(CLOCK_MONOTONIC) - start >= half;

    int64_t late_mono = sleep_until(CLOCK_MONOTONIC, clock_now_ns(CLOCK_MONOTONIC) + half);
    int64_t late_boot = sleep_until(CLOCK_BOOTTIME, clock_now_ns(CLOCK_BOOTTIME) + half);
    int abs_ok = late_mono >= 0 && late_boot >= 0;

    struct itimerspec its = {{0, 0}, ns_timespec(clock_now_ns(CLOCK_MONOTONIC) + 10 * kSecond)};
    CHECK(timer_settime(timer, TIMER_ABSTIME, &its, NULL) == 0);
    CHECK(timer_gettime(timer, &its) == 0);
    int timer_ok = its.it_value.tv_sec * kSecond + its.it_value.tv_nsec <= 10 * kSecond;

    CHECK(pthread_mutex_lock(&mutex) == 0);
    int64_t wait_start = clock_now_ns(CLOCK_MONOTONIC);
    struct timespec deadline = ns_timespec(wait_start + 5000000);
    int r;
    while ((r = pthread_cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &deadline)) == 0) {
    }
    int64_t waited = clock_now_ns(CLOCK_MONOTONIC) - wait_start;
    CHECK(pthread_mutex_unlock(&mutex) == 0);
    int cond_ok = r == ETIMEDOUT && waited >= 5000000;

    last_mono = clock_now_ns(CLOCK_MONOTONIC), last_raw = clock_now_ns(CLOCK_MONOTONIC_RAW);
    last_boot = clock_now_ns(CLOCK_BOOTTIME);
    printf("step %ld mono %d raw %d boot %d rel %d abs %d timer %d cond %d\n", step, mono_ok, raw_ok,
           boot_ok, rel_ok, abs_ok, timer_ok, cond_ok);
  }
  printf("done\n");
  return 0;
}
