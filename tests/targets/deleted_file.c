/* deleted_file: a scratch file unlinked while open, whose contents, offsets, mode and sharing
 * must survive a checkpoint. In DIR:
 *   scratch.dat  created, filled, chmod 0640, then unlinked; descriptors:
 *     fd_a, fd_b  one open file description (dup): records are appended through them, the
 *                 shared offset is printed at every step
 *     fd_r        a second description of the same file (reopened read-only through
 *                 /proc/self/fd): reads it sequentially with its own offset
 *     map         a MAP_SHARED page of it: a counter written through the mapping is read back
 *                 through fd_r with pread (they must still be one file after a restart)
 *   Every 4 steps a header at offset 0 is rewritten in place.
 * usage: deleted_file DIR [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER 32
#define PAGE 4096

static void write_header(int fd, long step) {
  char h[64];
  snprintf(h, sizeof h, "header step %08ld%*s\n", step, HEADER - 21, "");
  CHECK(pwrite(fd, h, HEADER, 0) == HEADER);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: deleted_file DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  CHECK(chdir(argv[1]) == 0);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);

  int fd_a = open("scratch.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(fd_a >= 0);
  write_header(fd_a, 0);
  uint64_t seed = 7;
  for (int i = 0; i < 100; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "initial %04d %016llx\n", i, (unsigned long long)splitmix64(&seed));
    CHECK(write(fd_a, line, (size_t)n) == n);
  }
  CHECK(ftruncate(fd_a, 2 * PAGE) == 0); /* the counter page at [PAGE, 2*PAGE) */
  CHECK(lseek(fd_a, 0, SEEK_END) == 2 * PAGE);
  CHECK(fchmod(fd_a, 0640) == 0);
  int fd_b = dup(fd_a);
  CHECK(fd_b >= 0);
  char proc_path[64];
  snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd_a);
  int fd_r = open(proc_path, O_RDONLY);
  CHECK(fd_r >= 0);
  uint64_t *counter = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd_a, PAGE);
  CHECK(counter != MAP_FAILED);
  CHECK(unlink("scratch.dat") == 0);

  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    char rec[64];
    int n = snprintf(rec, sizeof rec, "record %06ld %016llx\n", step, (unsigned long long)sum);
    CHECK(write(step % 2 ? fd_a : fd_b, rec, (size_t)n) == n);
    if (step % 4 == 0) write_header(fd_a, step);

    char buf[64];
    ssize_t got = read(fd_r, buf, 45);
    CHECK(got >= 0);
    sum = fnv1a(sum, buf, (size_t)got);

    counter[step % 8] += (uint64_t)step;
    uint64_t seen = 0;
    CHECK(pread(fd_r, &seen, sizeof seen, PAGE + (step % 8) * 8) == sizeof seen);

    char header[HEADER];
    CHECK(pread(fd_r, header, HEADER, 0) == HEADER);
    sum = fnv1a(sum, header, HEADER);

    struct stat st;
    CHECK(fstat(fd_r, &st) == 0);
    printf("step %ld off %lld %lld size %lld nlink %lu mode %o counter %llu seen %llu sum %016llx\n", step,
           (long long)lseek(fd_b, 0, SEEK_CUR), (long long)lseek(fd_r, 0, SEEK_CUR), (long long)st.st_size,
           (unsigned long)st.st_nlink, (unsigned)(st.st_mode & 07777), (unsigned long long)counter[step % 8],
           (unsigned long long)seen, (unsigned long long)sum);
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)sum);
  return 0;
}
