/* temp_output: files a program writes through write-only descriptors in a temporary directory,
 * as a compiler writes its assembly into /tmp for the assembler to read afterwards. In DIR
 * (which lies under /tmp in the tests):
 *   asm.s      opened O_WRONLY|O_CREAT|O_TRUNC, one line per step; at the end closed, read back by
 *              name and removed (a checkpoint's killed run that went on would have removed it)
 *   scratch    opened O_WRONLY, then unlinked: a deleted file only ever written; at the end read
 *              back through /proc/self/fd
 * Every step prints both offsets; the end prints each file's length and checksum.
 * usage: temp_output DIR [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_contents(const char *what, int fd) {
  uint64_t sum = FNV_INIT;
  long total = 0;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    sum = fnv1a(sum, buf, (size_t)n);
    total += n;
  }
  CHECK(n == 0);
  printf("%s: %ld bytes, checksum %016llx\n", what, total, (unsigned long long)sum);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: temp_output DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  CHECK(chdir(argv[1]) == 0);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);

  int out = open("asm.s", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(out >= 0);
  int scratch = open("scratch", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(scratch >= 0);
  CHECK(unlink("scratch") == 0);

  uint64_t seed = 11;
  for (long step = 1; step <= steps; step++) {
    char line[96];
    int n = snprintf(line, sizeof line, "\t.quad 0x%016llx  # step %ld\n", (unsigned long long)splitmix64(&seed), step);
    CHECK(write(out, line, (size_t)n) == n);
    n = snprintf(line, sizeof line, "scratch %06ld %016llx\n", step, (unsigned long long)splitmix64(&seed));
    CHECK(write(scratch, line, (size_t)n) == n);
    printf("step %ld asm.s at %lld scratch at %lld\n", step, (long long)lseek(out, 0, SEEK_CUR),
           (long long)lseek(scratch, 0, SEEK_CUR));
    sleep_ms(delay);
  }
  CHECK(close(out) == 0);
  int in = open("asm.s", O_RDONLY);
  CHECK(in >= 0);
  print_contents("asm.s", in);
  CHECK(close(in) == 0);
  CHECK(unlink("asm.s") == 0);
  char proc_path[64];
  snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", scratch);
  in = open(proc_path, O_RDONLY);
  CHECK(in >= 0);
  print_contents("scratch", in);
  printf("done\n");
  return 0;
}
