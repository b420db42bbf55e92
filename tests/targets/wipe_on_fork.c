/* wipe_on_fork: memory marked MADV_WIPEONFORK (zeroed in a forked child) and MADV_DONTFORK
 * (absent from it). A forked image writer would save zeros or nothing for them, so Stasis must
 * write this process's image in place; the contents are checked at every step.
 * usage: wipe_on_fork [STEPS=40] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  size_t size = 1 << 20;
  unsigned char *wipe = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *keep = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(wipe != MAP_FAILED && keep != MAP_FAILED);
  memset(wipe, 0x5a, size);
  memset(keep, 0xa5, size);
  CHECK(madvise(wipe, size, MADV_WIPEONFORK) == 0);
  CHECK(madvise(keep, size, MADV_DONTFORK) == 0);
  for (long step = 1; step <= steps; step++) {
    wipe[step * 4096] = (unsigned char)step;
    keep[step * 4096] = (unsigned char)(step + 1);
    uint64_t h = fnv1a(fnv1a(FNV_INIT, wipe, size), keep, size);
    printf("step %ld wipe %02x keep %02x checksum %016llx\n", step, wipe[size - 1], keep[size - 1],
           (unsigned long long)h);
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
