/* big_memory: a large heap buffer filled with a PRNG pattern, modified and checksummed at every
 * step; every FULL_EVERY steps the whole buffer is checksummed (and once more at the end).
 * usage: big_memory [MIB=1024] [STEPS=20] [DELAY_MS=100] [FULL_EVERY=5] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <unistd.h>

static uint64_t mix_words(uint64_t h, const uint64_t *w, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= w[i];
    h = (h << 27 | h >> 37) * 0x9e3779b97f4a7c15ULL;
  }
  return h;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long mib = arg_long(argc, argv, 1, 1024);
  long steps = arg_long(argc, argv, 2, 20);
  long delay = arg_long(argc, argv, 3, 100);
  long full_every = arg_long(argc, argv, 4, 5);
  size_t bytes = (size_t)mib << 20, words = bytes / 8, pg_words = 4096 / 8, pages = bytes / 4096;
  uint64_t *buf = malloc(bytes);
  CHECK(buf != NULL);
  uint64_t seed = 0x5eed;
  for (size_t i = 0; i < words; i++) buf[i] = splitmix64(&seed);
  printf("filled %ld MiB checksum %016llx\n", mib, (unsigned long long)mix_words(0, buf, words));

  uint64_t rng = 99, running = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t h = 0;
    for (int k = 0; k < 64; k++) { /* rewrite a few words in 64 random pages */
      size_t pg = splitmix64(&rng) % pages;
      uint64_t *w = buf + pg * pg_words;
      for (int j = 0; j < 8; j++) w[(j * 61) % pg_words] ^= splitmix64(&rng);
      h = mix_words(h, w, pg_words);
    }
    running = fnv1a(running, &h, 8);
    if (full_every > 0 && step % full_every == 0) {
      printf("step %ld pages %016llx full %016llx\n", step, (unsigned long long)h,
             (unsigned long long)mix_words(0, buf, words));
    } else {
      printf("step %ld pages %016llx\n", step, (unsigned long long)h);
    }
    sleep_ms(delay);
  }
  printf("done full %016llx running 0x%016llx\n", (unsigned long long)mix_words(0, buf, words),
         (unsigned long long)running);
  free(buf);
  return 0;
}
