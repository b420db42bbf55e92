/* coordinator_sends: threads that talk to the coordinator without pause while checkpoints come.
 * usage: coordinator_sends [STEPS=60] [DELAY_MS=50] [THREADS=3]
 * Each extra thread publishes a name-service entry again and again (stasis_plugin_ns_publish,
 * found with dlsym: absent without Stasis, and then the threads only count). The runtime sends
 * each on the process's one coordinator connection under a lock, which a checkpoint once found
 * held by a thread it had stopped, and waited for forever. The main thread prints
 * "step N value V" per step and "done checksum 0x..." at the end; the output never depends on
 * the publishing threads. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

typedef int (*publish_fn)(const char *key, const void *value, uint32_t len);
static publish_fn g_publish;
static atomic_int g_stop;

static void *publisher(void *arg) {
  char key[32];
  snprintf(key, sizeof key, "sender-%ld", (long)(intptr_t)arg);
  unsigned long round = 0;
  while (!atomic_load(&g_stop)) {
    round++;
    if (g_publish != NULL) g_publish(key, &round, sizeof round);
  }
  return NULL;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  long threads = arg_long(argc, argv, 3, 3);
  g_publish = (publish_fn)dlsym(RTLD_DEFAULT, "stasis_plugin_ns_publish");
  pthread_t ids[16];
  if (threads > 16) threads = 16;
  for (long i = 0; i < threads; i++)
    CHECK(pthread_create(&ids[i], NULL, publisher, (void *)(intptr_t)i) == 0);
  uint64_t seed = 99, checksum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed);
    checksum = fnv1a(checksum, &v, sizeof v);
    printf("step %ld value %llu\n", step, (unsigned long long)(v % 1000000007ULL));
    sleep_ms(delay);
  }
  atomic_store(&g_stop, 1);
  for (long i = 0; i < threads; i++) CHECK(pthread_join(ids[i], NULL) == 0);
  printf("done checksum 0x%016llx\n", (unsigned long long)checksum);
  return 0;
}
