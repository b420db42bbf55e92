/* mapped_mremap: mremap of memory a mapped restart brought back from an image.
 * usage: mapped_mremap [STEPS=40] [DELAY_MS=100] [MIB=8]
 * Fills MIB MiB of private anonymous memory with non-zero bytes (an uncompressed image holds it
 * in mappable 1 MiB chunks, each its own mapping after a restart), then per step: odd steps grow
 * the buffer by 1 MiB with MREMAP_MAYMOVE (the new part must read zeros, then is filled), even
 * steps move its middle half elsewhere and back with MREMAP_FIXED and shrink it by 256 KiB in
 * place. Prints "step N size S checksum C" per step and a final checksum. Once per run, when
 * the buffer is backed by a checkpoint image (a restart mapped it), it says so on stderr. */
#include "mapped_common.h"

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 100);
  size_t len = (size_t)arg_long(argc, argv, 3, 8) * MIB;
  unsigned char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  fill(buf, len, 11);
  /* A place to move parts of the buffer to and back from (kept reserved, PROT_NONE). */
  unsigned char *spare = mmap(NULL, 64 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(spare != MAP_FAILED);
  for (long step = 1; step <= steps; step++) {
    report_if_backed_by_image("mapped_mremap", buf, len);
    if (step % 2) {
      unsigned char *grown = mremap(buf, len, len + MIB, MREMAP_MAYMOVE);
      if (grown == MAP_FAILED) {
        printf("step %ld: mremap to grow %zu bytes failed: %s\n", step, len, strerror(errno));
        return 1;
      }
      buf = grown;
      for (long i = 0; i < MIB; i++) CHECK(buf[len + i] == 0);
      fill(buf + len, MIB, (uint64_t)step);
      len += MIB;
    } else {
      size_t quarter = (len / 4) & ~(size_t)4095;
      unsigned char *middle = buf + quarter;
      size_t half = 2 * quarter;
      CHECK(mremap(middle, half, half, MREMAP_MAYMOVE | MREMAP_FIXED, spare) == spare);
      CHECK(mremap(spare, half, half, MREMAP_MAYMOVE | MREMAP_FIXED, middle) == middle);
      CHECK(mmap(spare, half, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == spare);
      CHECK(mremap(buf, len, len - 256 * 1024, 0) == buf);
      len -= 256 * 1024;
    }
    printf("step %ld size %zu checksum 0x%016llx\n", step, len,
           (unsigned long long)fnv1a(FNV_INIT, buf, len));
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)fnv1a(FNV_INIT, buf, len));
  return 0;
}
