/* sparse_shm STEPS MS MIB: a MIB MiB file in /dev/shm, mapped shared, of which 16 pages spread
 * over the file are written (what Open MPI's shared-memory segments look like: 4 MiB, ~100 KiB
 * written). Each step changes one word of one written page and prints the sum of the written
 * pages, and reads back through the file (pread, which never fills a hole) a hole page, which
 * must be zeros, and a written page, which must equal the mapping. A checkpoint saves only the
 * written extents (named_shm.cc); a restart that put one at another offset, lost one, or left
 * bytes in a hole prints another sum or FAIL. The file is removed at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { PAGE = 4096, WRITTEN = 16 };

static uint64_t page_offset(int i, uint64_t size) { return (uint64_t)i * (size / WRITTEN) + (uint64_t)i * 3 * PAGE; }

static int pread_page(const char *path, uint64_t offset, unsigned char *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = pread(fd, out, PAGE, (off_t)offset);
  close(fd);
  return n == PAGE ? 0 : -1;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 40, ms = argc > 2 ? atoi(argv[2]) : 50;
  uint64_t size = (uint64_t)(argc > 3 ? atoi(argv[3]) : 64) << 20;
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/stasis-sparse-shm-%d", (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
    perror(path);
    return 1;
  }
  unsigned char *file = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  /* only the mapping keeps it: saved as a shared temporary file */
  if (file == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  for (int i = 0; i < WRITTEN; i++) memset(file + page_offset(i, size), 'a' + i, PAGE);
  unsigned char page[PAGE];
  for (int s = 0; s < steps; s++) {
    uint64_t *word = (uint64_t *)(file + page_offset(s % WRITTEN, size)) + s % (PAGE / 8);
    *word = *word * 31 + (uint64_t)s;
    uint64_t sum = 0;
    for (int i = 0; i < WRITTEN; i++)
      for (int w = 0; w < PAGE / 8; w++) sum = sum * 7 + ((uint64_t *)(file + page_offset(i, size)))[w];
    const uint64_t hole = page_offset(s % WRITTEN, size) + PAGE;  /* just after a written page */
    int hole_zero = pread_page(path, hole, page) == 0;
    for (int b = 0; hole_zero && b < PAGE; b++) hole_zero = page[b] == 0;
    int data_same = pread_page(path, page_offset(s % WRITTEN, size), page) == 0 &&
                    memcmp(page, file + page_offset(s % WRITTEN, size), PAGE) == 0;
    if (!hole_zero || !data_same) {
      printf("FAIL step %d: %s\n", s, !hole_zero ? "a hole of the file is not zeros" : "the file differs from its mapping");
      fflush(stdout);
      return 1;
    }
    printf("step %d sum %016llx\n", s, (unsigned long long)sum);
    fflush(stdout);
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
  unlink(path);
  printf("done\n");
  return 0;
}
