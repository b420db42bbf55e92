/* mapped_madvise: anonymous memory must keep anonymous semantics after a mapped restart.
 * usage: mapped_madvise [STEPS=40] [DELAY_MS=100] [MIB=8]
 * Fills MIB MiB of private anonymous memory with non-zero bytes (so an uncompressed image holds
 * it in mappable 1 MiB chunks), then per step: MADV_DONTNEED on one MiB-sized slice must read back
 * zeros (not the bytes a checkpoint image held there), MADV_FREE and MADV_WIPEONFORK must
 * succeed (the kernel refuses both on file mappings), then the slice is refilled with this
 * step's bytes. Prints "step N slice S checksum C" per step and a final checksum. Once per run,
 * when the buffer is backed by a checkpoint image (a restart mapped it), it says so on stderr:
 * the test checks that the restart did map it. */
#include "mapped_common.h"

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 100);
  long mib = arg_long(argc, argv, 3, 8);
  size_t len = (size_t)mib * MIB;
  unsigned char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  fill(buf, len, 7);
  for (long step = 1; step <= steps; step++) {
    report_if_backed_by_image("mapped_madvise", buf, len);
    unsigned char *slice = buf + (size_t)(step % mib) * MIB;
    /* Half a slice, starting inside it: the range cuts through a mapped chunk. */
    unsigned char *half = slice + MIB / 4;
    CHECK(madvise(half, MIB / 2, MADV_DONTNEED) == 0);
    for (long i = 0; i < MIB / 2; i++)
      if (half[i] != 0) {
        printf("step %ld: byte %ld after MADV_DONTNEED is %u, not 0\n", step, i, half[i]);
        return 1;
      }
    CHECK(madvise(slice, MIB, MADV_FREE) == 0);
    CHECK(madvise(slice, MIB, MADV_WIPEONFORK) == 0);
    CHECK(madvise(slice, MIB, MADV_KEEPONFORK) == 0);
    fill(slice, MIB, (uint64_t)step);
    printf("step %ld slice %ld checksum 0x%016llx\n", step, step % mib,
           (unsigned long long)fnv1a(FNV_INIT, buf, len));
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)fnv1a(FNV_INIT, buf, len));
  return 0;
}
