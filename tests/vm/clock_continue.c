/* clock_continue: the monotonic clocks as a program sees them from one step to the next. Every
 * step prints, as 0/1, whether each clock advanced by less than DELAY + 1 s since the previous
 * step (no gap): CLOCK_MONOTONIC, MONOTONIC_RAW, MONOTONIC_COARSE, BOOTTIME; and whether
 * absolute waits on CLOCK_MONOTONIC (clock_nanosleep TIMER_ABSTIME, a timerfd with
 * TFD_TIMER_ABSTIME) to now + DELAY/2 lasted at least DELAY/2 and at most DELAY/2 + 1 s, so a
 * deadline in the program's time is kept in the kernel's (neither fired at once nor late).
 * An uninterrupted run prints 1 everywhere. Restarted with `stasis restart --clock=continue` some
 * seconds after the checkpoint it must print the same; with the default (elapsed) the step
 * across the restart shows the gap.
 * With "vm" it also holds a KVM virtual machine (no vCPU): `stasis restart` without --clock
 * then continues the clocks by itself.
 * usage: clock_continue [STEPS=40] [DELAY_MS=100] [vm] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>

static const int64_t kSecond = 1000000000LL;

/* 1 when an absolute wait to now + half lasted [half, half + 1 s] on CLOCK_MONOTONIC_RAW
 * (a clock this program never waits on, so it measures the wait itself). */
static int waited_right(int64_t started_raw, int64_t half) {
  int64_t waited = clock_now_ns(CLOCK_MONOTONIC_RAW) - started_raw;
  return waited >= half - 2000000 && waited <= half + kSecond;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  int64_t delay = arg_long(argc, argv, 2, 100) * 1000000LL;
  const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};
  int64_t last[4];
  for (int c = 0; c < 4; c++) last[c] = clock_now_ns(clocks[c]);
  if (argc > 3 && strcmp(argv[3], "vm") == 0) {
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    CHECK(kvm >= 0);
    CHECK(ioctl(kvm, KVM_CREATE_VM, 0) >= 0);
  }
  int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
  CHECK(tfd >= 0);
  for (long step = 1; step <= steps; step++) {
    int no_gap[4];
    for (int c = 0; c < 4; c++) {
      int64_t now = clock_now_ns(clocks[c]);
      no_gap[c] = now - last[c] < delay + kSecond && now >= last[c];
      last[c] = now;
    }
    int64_t half = delay / 2;
    int64_t raw = clock_now_ns(CLOCK_MONOTONIC_RAW);
    struct timespec target = ns_timespec(clock_now_ns(CLOCK_MONOTONIC) + half);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, NULL) == EINTR) {
    }
    int sleep_ok = waited_right(raw, half);
    raw = clock_now_ns(CLOCK_MONOTONIC_RAW);
    struct itimerspec setting = {{0, 0}, ns_timespec(clock_now_ns(CLOCK_MONOTONIC) + half)};
    CHECK(timerfd_settime(tfd, TFD_TIMER_ABSTIME, &setting, NULL) == 0);
    uint64_t expirations = 0;
    while (read(tfd, &expirations, sizeof expirations) < 0 && errno == EINTR) {
    }
    int timerfd_ok = waited_right(raw, half) && expirations == 1;
    printf("step %ld mono %d raw %d coarse %d boot %d sleep %d timerfd %d\n", step, no_gap[0], no_gap[1],
           no_gap[2], no_gap[3], sleep_ok, timerfd_ok);
    for (int c = 0; c < 4; c++) last[c] = clock_now_ns(clocks[c]);
  }
  printf("done\n");
  return 0;
}
