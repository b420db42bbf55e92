/* threads_condvar: NTHREADS threads pass a token round-robin with a mutex and one condition
 * variable per thread; the holder sleeps DELAY_MS (outside the lock), updates shared and
 * thread-local state and prints a line. Output order is fixed by the token, so it is
 * deterministic. A pthread_barrier and a rwlock are used every round too.
 * usage: threads_condvar [ROUNDS=12] [DELAY_MS=30] [NTHREADS=8] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>

#define MAX_THREADS 64
static long g_rounds, g_delay;
static int g_nthreads;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv[MAX_THREADS];
static long g_turn;  /* total number of token passes so far */
static uint64_t g_shared = FNV_INIT;
static pthread_barrier_t g_barrier;
static pthread_rwlock_t g_rw = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t g_rw_value;
static uint64_t g_thread_result[MAX_THREADS];

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t local_seed = 1000 + (uint64_t)id;
  uint64_t local_sum = 0;
  for (long r = 0; r < g_rounds; r++) {
    pthread_mutex_lock(&g_mu);
    while (g_turn % g_nthreads != id) pthread_cond_wait(&g_cv[id], &g_mu);
    pthread_mutex_unlock(&g_mu);

    sleep_ms(g_delay); /* holding the token, not the lock */

    pthread_rwlock_rdlock(&g_rw);
    uint64_t seen = g_rw_value;
    pthread_rwlock_unlock(&g_rw);

    pthread_mutex_lock(&g_mu);
    uint64_t v = splitmix64(&local_seed);
    local_sum += v ^ seen;
    g_shared = fnv1a(g_shared, &v, sizeof v);
    printf("step %ld round %ld thread %d value %llu shared %016llx\n", g_turn + 1, r, id,
           (unsigned long long)(v % 1000003ULL), (unsigned long long)g_shared);
    g_turn++;
    pthread_cond_signal(&g_cv[g_turn % g_nthreads]);
    pthread_mutex_unlock(&g_mu);

    if (id == g_nthreads - 1) { /* last in the round publishes through the rwlock */
      pthread_rwlock_wrlock(&g_rw);
      g_rw_value = g_shared;
      pthread_rwlock_unlock(&g_rw);
    }
    pthread_barrier_wait(&g_barrier);
  }
  g_thread_result[id] = local_sum;
  return NULL;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  g_rounds = arg_long(argc, argv, 1, 12);
  g_delay = arg_long(argc, argv, 2, 30);
  g_nthreads = (int)arg_long(argc, argv, 3, 8);
  CHECK(g_nthreads >= 1 && g_nthreads <= MAX_THREADS);
  for (int i = 0; i < g_nthreads; i++) pthread_cond_init(&g_cv[i], NULL);
  CHECK(pthread_barrier_init(&g_barrier, NULL, (unsigned)g_nthreads) == 0);
  pthread_t th[MAX_THREADS];
  for (int i = 0; i < g_nthreads; i++)
    CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < g_nthreads; i++) CHECK(pthread_join(th[i], NULL) == 0);
  uint64_t sum = g_shared;
  for (int i = 0; i < g_nthreads; i++) sum = fnv1a(sum, &g_thread_result[i], sizeof(uint64_t));
  printf("done turns %ld checksum 0x%016llx\n", g_turn, (unsigned long long)sum);
  return 0;
}
