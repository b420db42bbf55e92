/* mixed_memory: MIB of memory holding what real programs hold, in equal quarters: pages of zeros
 * (allocated, touched, never filled), a repeated 64-byte record pattern, smooth double arrays
 * (a simulation's fields), and random bytes. Each step changes ~1% of the pages of each quarter
 * and prints a checksum of everything.
 * usage: mixed_memory [MIB=1024] [STEPS=20] [DELAY_MS=100] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <math.h>
#include <sys/mman.h>

static uint64_t checksum(const uint64_t *w, size_t n) {
  uint64_t h = FNV_INIT;
  for (size_t i = 0; i < n; i++) h = (h ^ w[i]) * 0x100000001b3ULL;
  return h;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  size_t mib = (size_t)arg_long(argc, argv, 1, 1024);
  long steps = arg_long(argc, argv, 2, 20);
  long delay = arg_long(argc, argv, 3, 100);
  size_t bytes = mib << 20, quarter = bytes / 4;
  unsigned char *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED);
  unsigned char *zeros = mem, *pattern = mem + quarter, *field = mem + 2 * quarter,
                *noise = mem + 3 * quarter;
  for (size_t i = 0; i < quarter; i += 4096) zeros[i] = 1, zeros[i] = 0;  /* touched, still zero */
  for (size_t i = 0; i < quarter; i += 64)
    snprintf((char *)pattern + i, 64, "record %012zu state=ok flags=0x%04zx ......", i / 64, (i / 64) % 7);
  double *d = (double *)field;
  for (size_t i = 0; i < quarter / 8; i++) d[i] = sin((double)i * 1e-4) * 300.0 + 273.15;
  uint64_t seed = 42;
  for (size_t i = 0; i < quarter; i += 8) *(uint64_t *)(noise + i) = splitmix64(&seed);
  printf("filled %zu MiB checksum %016llx\n", mib,
         (unsigned long long)checksum((uint64_t *)mem, bytes / 8));
  for (long step = 1; step <= steps; step++) {
    for (size_t page = (size_t)step * 4096; page < quarter; page += 100 * 4096) {
      d[page / 8] += 0.5;
      *(uint64_t *)(noise + page) = splitmix64(&seed);
      pattern[page + 7] = (unsigned char)('a' + step % 26);
    }
    printf("step %ld checksum %016llx\n", step, (unsigned long long)checksum((uint64_t *)mem, bytes / 8));
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
