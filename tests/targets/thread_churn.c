/* thread_churn: threads are created and end all the time, so a checkpoint is likely to catch a
 * thread being born (clone in flight), running, exiting, or waiting to be joined:
 *   - each step creates WORKERS joinable threads that each compute a hash and exit; main joins them
 *   - each step also creates one detached thread that bumps an atomic counter and exits; main
 *     waits (bounded) until the counter says all detached threads so far have run
 *   - one long-lived thread keeps a running hash of every step's result
 * usage: thread_churn [STEPS=60] [DELAY_MS=30] [WORKERS=4] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <stdatomic.h>

static atomic_long g_detached_done;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static uint64_t g_posted, g_mixed = FNV_INIT;
static long g_posted_step, g_mixed_step;
static int g_stop;

struct job {
  long step;
  int id;
  uint64_t out;
};

static void *worker(void *arg) {
  struct job *j = arg;
  uint64_t s = (uint64_t)j->step * 1000 + (uint64_t)j->id;
  uint64_t h = FNV_INIT;
  for (int i = 0; i < 2000; i++) {
    uint64_t v = splitmix64(&s);
    h = fnv1a(h, &v, 8);
  }
  j->out = h;
  return NULL;
}

static void *detached(void *arg) {
  (void)arg;
  atomic_fetch_add(&g_detached_done, 1);
  return NULL;
}

static void *mixer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  while (!g_stop) {
    if (g_posted_step != g_mixed_step) {
      g_mixed = fnv1a(g_mixed, &g_posted, 8);
      g_mixed_step = g_posted_step;
      pthread_cond_broadcast(&g_cv);
    }
    pthread_cond_wait(&g_cv, &g_mu);
  }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 30);
  int workers = (int)arg_long(argc, argv, 3, 4);
  CHECK(workers >= 1 && workers <= 64);
  pthread_attr_t det;
  pthread_attr_init(&det);
  pthread_attr_setdetachstate(&det, PTHREAD_CREATE_DETACHED);
  pthread_t mix;
  CHECK(pthread_create(&mix, NULL, mixer, NULL) == 0);
  for (long step = 1; step <= steps; step++) {
    pthread_t th[64];
    struct job jobs[64];
    for (int i = 0; i < workers; i++) {
      jobs[i] = (struct job){step, i, 0};
      CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
    }
    pthread_t d;
    CHECK(pthread_create(&d, &det, detached, NULL) == 0);
    uint64_t h = FNV_INIT;
    for (int i = 0; i < workers; i++) {
      CHECK(pthread_join(th[i], NULL) == 0);
      h = fnv1a(h, &jobs[i].out, 8);
    }
    for (int spin = 0; atomic_load(&g_detached_done) < step && spin < 5000; spin++) sleep_ms(1);
    pthread_mutex_lock(&g_mu);
    g_posted = h;
    g_posted_step = step;
    pthread_cond_broadcast(&g_cv);
    while (g_mixed_step != step) pthread_cond_wait(&g_cv, &g_mu);
    uint64_t mixed = g_mixed;
    pthread_mutex_unlock(&g_mu);
    printf("step %ld workers %016llx detached %ld mixed %016llx\n", step, (unsigned long long)h,
           atomic_load(&g_detached_done), (unsigned long long)mixed);
    sleep_ms(delay);
  }
  pthread_mutex_lock(&g_mu);
  g_stop = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  CHECK(pthread_join(mix, NULL) == 0);
  printf("done checksum 0x%016llx\n", (unsigned long long)g_mixed);
  return 0;
}
