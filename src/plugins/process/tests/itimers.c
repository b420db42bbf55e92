/* itimers: alarm() and ITIMER_VIRTUAL keep their remaining time across a checkpoint: neither lost
 * nor started again from scratch.
 *   - alarm(6) armed at step 1; its SIGALRM handler notes the CLOCK_MONOTONIC time;
 *   - ITIMER_VIRTUAL of 1 s of user CPU time armed at step 1; its handler notes how much CPU time
 *     the program had used (counted by the program itself, across restarts).
 * Each step burns 20 ms of CPU and sleeps DELAY-20 ms. After CPU_CHECK_STEP steps the program
 * waits (burning CPU) for the virtual timer, after ALARM_CHECK_STEP steps for the alarm, then
 * prints whether each fired in time: the virtual timer between 0.75 and 1.7 s of CPU, the alarm
 * 6 to 7.8 s after it was armed (ITIMER_VIRTUAL counts sampled user-time ticks, this program
 * precise thread CPU time: on a loaded machine the two drift apart by tenths of a second). A
 * checkpoint after step 40 (about 2 s, 0.8 s of CPU) restarted
 * with the timers started again would fire them at >= 1.8 s of CPU and >= 8 s.
 * usage: itimers [STEPS=140] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

static const int64_t kMs = 1000000LL;
static volatile int64_t g_cpu_used_ns; /* user CPU time this program has burnt, restarts included */
static volatile int64_t g_alarm_at_ns, g_virtual_at_ns = -1;

static int64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_alarm(int sig) {
  (void)sig;
  g_alarm_at_ns = now_ns(CLOCK_MONOTONIC);
}

static void on_virtual(int sig) {
  (void)sig;
  if (g_virtual_at_ns < 0) g_virtual_at_ns = g_cpu_used_ns;
}

/* Burns `ns` of CPU, counted in increments of this thread's CPU clock, which starts again from
 * zero in a restarted process: a step back is a restart, not negative time. */
static void burn_cpu(int64_t ns) {
  static volatile uint64_t sink;
  int64_t last = now_ns(CLOCK_THREAD_CPUTIME_ID), done = 0;
  while (done < ns) {
    for (int i = 0; i < 20000; i++) sink = sink * 6364136223846793005ULL + 1;
    int64_t now = now_ns(CLOCK_THREAD_CPUTIME_ID);
    if (now > last) {
      done += now - last;
      g_cpu_used_ns += now - last;
    }
    last = now;
  }
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 140);
  long delay = arg_long(argc, argv, 2, 50);
  const long cpu_check_step = 80, alarm_check_step = 130;
  CHECK(steps >= alarm_check_step && delay > 20);
  signal(SIGALRM, on_alarm);
  signal(SIGVTALRM, on_virtual);

  int64_t armed_at = 0;
  for (long step = 1; step <= steps; step++) {
    if (step == 1) {
      armed_at = now_ns(CLOCK_MONOTONIC);
      alarm(6);
      struct itimerval virt = {{0, 0}, {1, 0}};
      CHECK(setitimer(ITIMER_VIRTUAL, &virt, NULL) == 0);
    } else if (step == cpu_check_step) {
      while (g_virtual_at_ns < 0 && g_cpu_used_ns < 5000 * kMs) burn_cpu(5 * kMs);
      int64_t at = g_virtual_at_ns;
      printf("virtual timer fired %d in time %d\n", at >= 0, at >= 750 * kMs && at <= 1700 * kMs);
    } else if (step == alarm_check_step) {
      for (int i = 0; i < 1500 && g_alarm_at_ns == 0; i++) sleep_ms(10);
      int64_t after = g_alarm_at_ns - armed_at;
      printf("alarm fired %d in time %d\n", g_alarm_at_ns != 0,
             after >= 6000 * kMs && after <= 7800 * kMs);
    }
    burn_cpu(20 * kMs);
    printf("step %ld\n", step);
    sleep_ms(delay - 20);
  }
  printf("done\n");
  return 0;
}
