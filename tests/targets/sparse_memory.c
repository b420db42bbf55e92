/* sparse_memory: a large anonymous mapping (GIB GiB, MAP_NORESERVE) with one page in every 64 MiB
 * written; the rest is never touched and must read back as zeros. A checkpoint should store the
 * written pages only (the driver's --max-image-mb checks that), and the restarted process must
 * see the same sparse contents.
 * usage: sparse_memory [GIB=8] [STEPS=40] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  long gib = arg_long(argc, argv, 1, 8);
  long steps = arg_long(argc, argv, 2, 40);
  long delay = arg_long(argc, argv, 3, 50);
  size_t len = (size_t)gib << 30, stride = (size_t)64 << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(m != MAP_FAILED);
  size_t slots = len / stride;
  for (size_t i = 0; i < slots; i++) {
    uint64_t s = i;
    for (size_t k = 0; k < pg; k += 8) {
      uint64_t v = splitmix64(&s);
      memcpy(m + i * stride + k, &v, 8);
    }
  }
  for (long step = 1; step <= steps; step++) {
    size_t slot = (size_t)step % slots;
    m[slot * stride + (size_t)step % pg] ^= (unsigned char)step;
    uint64_t h = FNV_INIT;
    for (size_t i = 0; i < slots; i++) h = fnv1a(h, m + i * stride, pg);
    /* a page next to a written one, and one in the middle of a gap: never written, must be zero */
    size_t probe = ((size_t)step * 7 % slots) * stride;
    int zeros = 1;
    for (size_t k = 0; k < pg; k++)
      if (m[probe + pg + k] || m[probe + stride / 2 + k]) zeros = 0;
    printf("step %ld hash %016llx zeros %d\n", step, (unsigned long long)h, zeros);
    sleep_ms(delay);
  }
  printf("done slots %zu\n", slots);
  return 0;
}
