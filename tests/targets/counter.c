/* counter: the simplest checkpoint target, single-threaded.
 * usage: counter [STEPS=100] [DELAY_MS=50] [EXIT_CODE=0]
 * Keeps state in a register-heavy loop, on the stack, in a static and on the heap; prints
 * "step N value V" per step and "done checksum 0x..." at the end, then exits with EXIT_CODE. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

static uint64_t g_static_state = 12345;

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 100);
  long delay = arg_long(argc, argv, 2, 50);
  int exit_code = (int)arg_long(argc, argv, 3, 0);

  uint64_t *heap = calloc(4096, sizeof(uint64_t));
  CHECK(heap != NULL);
  uint64_t stack_arr[64];
  for (int i = 0; i < 64; i++) stack_arr[i] = (uint64_t)i * 7;
  uint64_t seed = 42, checksum = FNV_INIT;

  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed);
    heap[step % 4096] ^= v;
    stack_arr[step % 64] += v >> 3;
    g_static_state = g_static_state * 6364136223846793005ULL + 1442695040888963407ULL;
    checksum = fnv1a(checksum, &v, sizeof v);
    checksum = fnv1a(checksum, &stack_arr[step % 64], sizeof(uint64_t));
    printf("step %ld value %llu\n", step, (unsigned long long)(v % 1000000007ULL));
    sleep_ms(delay);
  }
  checksum = fnv1a(checksum, heap, 4096 * sizeof(uint64_t));
  checksum = fnv1a(checksum, stack_arr, sizeof stack_arr);
  checksum = fnv1a(checksum, &g_static_state, sizeof g_static_state);
  printf("done checksum 0x%016llx\n", (unsigned long long)checksum);
  free(heap);
  return exit_code;
}
