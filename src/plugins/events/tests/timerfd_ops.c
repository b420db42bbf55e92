/* timerfd_ops: timerfds keep their clock, remaining time, interval, flags and unread expirations
 * across a checkpoint.
 * usage: timerfd_ops [STEPS=60] [PERIOD_MS=30]
 * `periodic` (CLOCK_MONOTONIC, every PERIOD) paces the program: step N is printed once it has
 * expired N times in all, read with poll (a timer lost at restart is reported, not waited for).
 * `oneshot` (CLOCK_BOOTTIME, relative) expires once at 40 periods: at step 30 it must not have
 * fired and have at most ~10 periods left (re-armed with its full time, it would have more), at
 * step 45 it must have fired exactly once. `absolute` (CLOCK_REALTIME, TFD_TIMER_ABSTIME |
 * TFD_TIMER_CANCEL_ON_SET) was armed 10500 s in the past with a 1000 s interval: it holds 11
 * expirations that are only read at the end, and its deadline must stay where it was (a timer
 * re-armed relative would move by the time the program was down). `deadline` (CLOCK_MONOTONIC,
 * TFD_TIMER_ABSTIME) expires once at 50 periods (the time the program was down counts for it):
 * at step 30 its deadline must be unchanged, at step 55 it has fired once.
 * `idle` is never armed. */
#include "target_common.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

static const int64_t kNs = 1000000000LL;

static int64_t ts_ns(struct timespec t) { return t.tv_sec * kNs + t.tv_nsec; }
static struct timespec ns_ts(int64_t ns) { return (struct timespec){ns / kNs, ns % kNs}; }

static uint64_t expirations(int fd) {
  uint64_t n = 0;
  ssize_t got = read(fd, &n, sizeof n);
  if (got < 0 && errno == EAGAIN) return 0;
  CHECK(got == sizeof n);
  return n;
}

static int64_t remaining_ns(int fd) {
  struct itimerspec cur;
  CHECK(timerfd_gettime(fd, &cur) == 0);
  return ts_ns(cur.it_value);
}

/* "clockid: N" and "settime flags: 0N" of fd, from /proc/self/fdinfo. */
static void print_fdinfo(const char *name, int fd) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  const char *clock = strstr(text, "clockid:"), *flags = strstr(text, "settime flags:");
  CHECK(clock && flags);
  printf("%s clock %ld flags %lo\n", name, strtol(clock + 8, NULL, 10), strtol(flags + 14, NULL, 8));
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  int64_t period = arg_long(argc, argv, 2, 30) * 1000000LL;
  int periodic = timerfd_create(CLOCK_MONOTONIC, 0);
  int oneshot = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK);
  int absolute = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
  int idle = timerfd_create(CLOCK_MONOTONIC, 0);
  int deadline = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  CHECK(periodic >= 0 && oneshot >= 0 && absolute >= 0 && idle >= 0 && deadline >= 0);

  struct itimerspec once = {{0, 0}, ns_ts(40 * period)};
  CHECK(timerfd_settime(oneshot, 0, &once, NULL) == 0); /* before `periodic`: never later than it */
  struct timespec now;
  CHECK(clock_gettime(CLOCK_MONOTONIC, &now) == 0);
  const int64_t deadline_ns = ts_ns(now) + 50 * period;
  struct itimerspec at = {{0, 0}, ns_ts(deadline_ns)};
  CHECK(timerfd_settime(deadline, TFD_TIMER_ABSTIME, &at, NULL) == 0);
  struct itimerspec pace = {ns_ts(period), ns_ts(period)};
  CHECK(timerfd_settime(periodic, 0, &pace, NULL) == 0);
  CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0);
  const int64_t next_absolute = ts_ns(now) - 10500 * kNs + 11 * 1000 * kNs; /* 500 s from now */
  struct itimerspec past = {{1000, 0}, ns_ts(ts_ns(now) - 10500 * kNs)};
  CHECK(timerfd_settime(absolute, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &past, NULL) == 0);

  uint64_t total = 0;
  for (long step = 1; step <= steps; step++) {
    while (total < (uint64_t)step) {
      struct pollfd p = {periodic, POLLIN, 0};
      int ready;
      while ((ready = poll(&p, 1, 5000)) < 0 && errno == EINTR) {
      }
      if (ready != 1) {
        printf("FAILED: the periodic timer stopped after %llu expirations\n", (unsigned long long)total);
        return 1;
      }
      total += expirations(periodic);
    }
    printf("step %ld", step);
    if (step == 30) {
      int64_t left = remaining_ns(oneshot);
      printf(" oneshot pending %s, at most 11 periods left %s", expirations(oneshot) == 0 ? "yes" : "NO",
             left > 0 && left <= 11 * period ? "yes" : "NO");
      /* Down time counts for an absolute timer: it may have expired by now, but not early. */
      CHECK(clock_gettime(CLOCK_MONOTONIC, &now) == 0);
      int64_t left_deadline = remaining_ns(deadline), expected = deadline_ns - ts_ns(now);
      printf(" deadline kept %s", (left_deadline == 0 && expected <= 0) ||
                                      (left_deadline - expected > -50000000 && left_deadline - expected < 50000000)
                                  ? "yes" : "NO");
    }
    if (step == 55) printf(" deadline fired %llu", (unsigned long long)expirations(deadline));
    if (step == 45) printf(" oneshot fired %llu", (unsigned long long)expirations(oneshot));
    if (step % 10 == 0) {
      CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0);
      int64_t drift = remaining_ns(absolute) - (next_absolute - ts_ns(now));
      printf(" absolute deadline kept %s", drift > -50000000 && drift < 50000000 ? "yes" : "NO");
    }
    printf("\n");
  }
  printf("absolute expirations %llu\n", (unsigned long long)expirations(absolute));
  struct itimerspec cur;
  CHECK(timerfd_gettime(idle, &cur) == 0);
  printf("idle disarmed %s, oneshot disarmed %s\n",
         ts_ns(cur.it_value) == 0 && ts_ns(cur.it_interval) == 0 ? "yes" : "NO",
         remaining_ns(oneshot) == 0 ? "yes" : "NO");
  print_fdinfo("periodic", periodic);
  print_fdinfo("oneshot", oneshot);
  print_fdinfo("absolute", absolute);
  print_fdinfo("deadline", deadline);
  printf("nonblock %d%d%d%d\n", !!(fcntl(periodic, F_GETFL) & O_NONBLOCK), !!(fcntl(oneshot, F_GETFL) & O_NONBLOCK),
         !!(fcntl(absolute, F_GETFL) & O_NONBLOCK), !!(fcntl(idle, F_GETFL) & O_NONBLOCK));
  printf("done\n");
  return 0;
}
