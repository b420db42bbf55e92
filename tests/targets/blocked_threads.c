/* blocked_threads: threads that spend nearly all their time blocked in the kernel while the main
 * thread prints progress:
 *   - sleeper 0: relative nanosleep() in a loop
 *   - sleeper 1: clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) in a loop, absolute deadlines
 *   - sleeper 2: clock_nanosleep(CLOCK_REALTIME) relative, one long nap
 *   - reader:    blocked in read(0) until a line arrives on stdin
 * After STEPS steps the main thread joins the sleepers, prints "waiting for input" and joins the
 * reader, which prints what it read. The driver writes stdin only after seeing that line, so the
 * output is deterministic. EINTR is retried like a careful program would.
 * usage: blocked_threads [STEPS=60] [DELAY_MS=50] [NAPS=30] [NAP_MS=100] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <unistd.h>

static long g_naps, g_nap_ms;
static long g_naps_done[3];

static void *sleeper_rel(void *arg) {
  (void)arg;
  for (long i = 0; i < g_naps; i++) {
    sleep_ms(g_nap_ms);
    g_naps_done[0]++;
  }
  return NULL;
}

static void *sleeper_abs(void *arg) {
  (void)arg;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  for (long i = 0; i < g_naps; i++) {
    deadline.tv_nsec += g_nap_ms * 1000000L;
    while (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_nsec -= 1000000000L;
      deadline.tv_sec++;
    }
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL)) == EINTR) {
    }
    CHECK(rc == 0);
    g_naps_done[1]++;
  }
  return NULL;
}

static void *sleeper_long(void *arg) {
  (void)arg;
  long total = g_naps * g_nap_ms;
  struct timespec req = {total / 1000, (total % 1000) * 1000000L}, rem;
  int rc;
  while ((rc = clock_nanosleep(CLOCK_REALTIME, 0, &req, &rem)) == EINTR) req = rem;
  CHECK(rc == 0);
  g_naps_done[2] = 1;
  return NULL;
}

static char g_input[256];
static ssize_t g_input_len = -1;

static void *reader(void *arg) {
  (void)arg;
  size_t n = 0;
  for (;;) {
    ssize_t r = read(0, g_input + n, sizeof g_input - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (memchr(g_input, '\n', n) || n == sizeof g_input - 1) break;
  }
  g_input[n] = '\0';
  char *nl = strchr(g_input, '\n');
  if (nl) *nl = '\0';
  g_input_len = (ssize_t)n;
  printf("reader got: %s\n", g_input);
  return NULL;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  g_naps = arg_long(argc, argv, 3, 30);
  g_nap_ms = arg_long(argc, argv, 4, 100);

  pthread_t th[4];
  CHECK(pthread_create(&th[0], NULL, sleeper_rel, NULL) == 0);
  CHECK(pthread_create(&th[1], NULL, sleeper_abs, NULL) == 0);
  CHECK(pthread_create(&th[2], NULL, sleeper_long, NULL) == 0);
  CHECK(pthread_create(&th[3], NULL, reader, NULL) == 0);

  uint64_t seed = 7, sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed);
    sum = fnv1a(sum, &v, sizeof v);
    printf("step %ld value %llu\n", step, (unsigned long long)(v % 1000000007ULL));
    sleep_ms(delay);
  }
  for (int i = 0; i < 3; i++) CHECK(pthread_join(th[i], NULL) == 0);
  printf("sleepers naps %ld %ld %ld\n", g_naps_done[0], g_naps_done[1], g_naps_done[2]);
  printf("waiting for input\n");
  CHECK(pthread_join(th[3], NULL) == 0);
  printf("done input_bytes %zd checksum 0x%016llx\n", g_input_len, (unsigned long long)sum);
  return 0;
}
