/* file_output: file descriptors whose offsets and contents must survive a checkpoint. Works in
 * DIR (chdir'd into, then only relative names, so the restored cwd matters too):
 *   input.dat   written first, then read sequentially through two descriptors that share one
 *               open file description (dup): the offset is shared and printed at every step
 *   records.out records appended with write(); every 5 steps the header at offset 0 is rewritten
 *               with lseek(SEEK_SET) then lseek(SEEK_END) back
 *   append.log  O_APPEND, one line per step
 *   stream.out  a fully buffered stdio stream, flushed every 10 steps (buffered data lives in
 *               memory across the checkpoint)
 *   random.bin  pwrite() at scattered offsets
 * usage: file_output DIR [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <unistd.h>

#define HEADER 32

static void write_header(int fd, long n) {
  char h[64];
  snprintf(h, sizeof h, "records: %08ld%*s\n", n, HEADER - 18, "");
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  CHECK(write(fd, h, HEADER) == HEADER);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: file_output DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  CHECK(chdir(argv[1]) == 0);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);

  FILE *in = fopen("input.dat", "w");
  CHECK(in != NULL);
  uint64_t seed = 3;
  for (int i = 0; i < 400; i++)
    fprintf(in, "input line %04d %016llx\n", i, (unsigned long long)splitmix64(&seed));
  CHECK(fclose(in) == 0);

  int fin = open("input.dat", O_RDONLY);
  CHECK(fin >= 0);
  int fin2 = dup(fin);
  CHECK(fin2 >= 0);
  int frec = open("records.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(frec >= 0);
  write_header(frec, 0);
  int fapp = open("append.log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  CHECK(fapp >= 0);
  FILE *stream = fopen("stream.out", "w");
  CHECK(stream != NULL);
  int frand = open("random.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(frand >= 0);

  uint64_t sum = FNV_INIT, rng = 11;
  for (long step = 1; step <= steps; step++) {
    char buf[128];
    ssize_t got = read(step % 2 ? fin : fin2, buf, 37);
    CHECK(got >= 0);
    sum = fnv1a(sum, buf, (size_t)got);
    off_t in_off = lseek(fin, 0, SEEK_CUR), in_off2 = lseek(fin2, 0, SEEK_CUR);

    char rec[96];
    int n = snprintf(rec, sizeof rec, "record %06ld %016llx\n", step, (unsigned long long)sum);
    CHECK(write(frec, rec, (size_t)n) == n);
    if (step % 5 == 0) {
      write_header(frec, step);
      CHECK(lseek(frec, 0, SEEK_END) > 0);
    }
    off_t rec_off = lseek(frec, 0, SEEK_CUR);

    n = snprintf(rec, sizeof rec, "append %ld\n", step);
    CHECK(write(fapp, rec, (size_t)n) == n);
    off_t app_off = lseek(fapp, 0, SEEK_CUR);

    fprintf(stream, "stream %ld %llu\n", step, (unsigned long long)(sum % 999983));
    if (step % 10 == 0) CHECK(fflush(stream) == 0);

    uint64_t v = splitmix64(&rng);
    CHECK(pwrite(frand, &v, 8, (off_t)((v % 512) * 8)) == 8);

    printf("step %ld read %zd in_off %lld %lld rec_off %lld app_off %lld\n", step, got,
           (long long)in_off, (long long)in_off2, (long long)rec_off, (long long)app_off);
    sleep_ms(delay);
  }
  CHECK(fclose(stream) == 0);
  CHECK(close(frec) == 0 && close(fapp) == 0 && close(frand) == 0);
  printf("done checksum 0x%016llx\n", (unsigned long long)sum);
  return 0;
}
