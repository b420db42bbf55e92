/* pipe_inflight: bytes in flight in a pipe survive a checkpoint, neither lost nor duplicated.
 * usage: pipe_inflight [STEPS=80] [DELAY_MS=50]
 * One process holds both ends of a pipe (and a dup of the read end). Each step writes 900
 * pseudo-random bytes and reads 600, so the pipe always holds data (up to ~24 KB) whenever the
 * checkpoint lands; the reader checksums the stream, and the rest is drained at the end. */
#include "target_common.h"

#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 80);
  long delay = arg_long(argc, argv, 2, 50);
  int ends[2];
  CHECK(pipe(ends) == 0);
  int read_dup = dup(ends[0]);
  CHECK(read_dup >= 0);
  uint64_t seed = 7, written = FNV_INIT, read_sum = FNV_INIT;
  unsigned char buf[1024];
  long total_in = 0, total_out = 0;
  for (long step = 1; step <= steps; step++) {
    for (int i = 0; i < 900; i++) buf[i] = (unsigned char)splitmix64(&seed);
    CHECK(write(ends[1], buf, 900) == 900);
    written = fnv1a(written, buf, 900);
    total_in += 900;
    int from = (step % 2) ? ends[0] : read_dup; /* both descriptors share one offset-less end */
    size_t want = 600, got = 0;
    while (got < want) {
      ssize_t n = read(from, buf + got, want - got);
      CHECK(n > 0);
      got += (size_t)n;
    }
    read_sum = fnv1a(read_sum, buf, want);
    total_out += (long)want;
    printf("step %ld in-flight %ld read-sum %016llx\n", step, total_in - total_out,
           (unsigned long long)read_sum);
    sleep_ms(delay);
  }
  close(ends[1]);
  ssize_t n;
  while ((n = read(ends[0], buf, sizeof buf)) > 0) {
    read_sum = fnv1a(read_sum, buf, (size_t)n);
    total_out += n;
  }
  printf("done wrote %ld read %ld match %s\n", total_in, total_out,
         (written == read_sum && total_in == total_out) ? "yes" : "NO");
  return 0;
}
