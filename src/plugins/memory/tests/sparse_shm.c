/* sparse_shm STEPS MS MIB [FILES WRITTEN]: a MIB MiB file in /dev/shm, mapped shared, of which 16
 * pages spread over the file are written (what Open MPI's shared-memory segments look like: 4 MiB,
 * ~100 KiB written). With FILES and WRITTEN: FILES such files, each with WRITTEN pages at an equal
 * stride (a vader segment has one page every 32 KiB: many extents, in many files). Each step changes one word of one written page and prints the sum of the written
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

enum { PAGE = 4096, MAX_FILES = 64 };
static int written = 16;

static uint64_t page_offset(int i, uint64_t size) {
  if (written == 16) return (uint64_t)i * (size / 16) + (uint64_t)i * 3 * PAGE;
  return (uint64_t)i * ((size / (uint64_t)written) & ~(uint64_t)(PAGE - 1));
}

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
  int files = argc > 4 ? atoi(argv[4]) : 1;
  written = argc > 5 ? atoi(argv[5]) : 16;
  if (files < 1 || files > MAX_FILES || written < 1 || (uint64_t)written * PAGE > size) {
    fprintf(stderr, "usage: sparse_shm STEPS MS MIB [FILES (1-%d) WRITTEN (pages a file)]\n", MAX_FILES);
    return 2;
  }
  char path[MAX_FILES][64];
  unsigned char *file[MAX_FILES];
  for (int f = 0; f < files; f++) {
    snprintf(path[f], sizeof path[f], "/dev/shm/stasis-sparse-shm-%d-%d", (int)getpid(), f);
    int fd = open(path[f], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
      perror(path[f]);
      return 1;
    }
    file[f] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);  /* only the mapping keeps it: saved as a shared temporary file */
    if (file[f] == MAP_FAILED) {
      perror("mmap");
      return 1;
    }
    for (int i = 0; i < written; i++) memset(file[f] + page_offset(i, size), 'a' + (i + f) % 26, PAGE);
  }
  unsigned char page[PAGE];
  for (int s = 0; s < steps; s++) {
    unsigned char *changed = file[s % files];
    uint64_t *word = (uint64_t *)(changed + page_offset(s % written, size)) + s % (PAGE / 8);
    *word = *word * 31 + (uint64_t)s;
    uint64_t sum = 0;
    for (int f = 0; f < files; f++)
      for (int i = 0; i < written; i++)
        for (int w = 0; w < PAGE / 8; w++) sum = sum * 7 + ((uint64_t *)(file[f] + page_offset(i, size)))[w];
    const uint64_t hole = page_offset(s % written, size) + PAGE;  /* just after a written page */
    int hole_zero = hole >= size || (pread_page(path[s % files], hole, page) == 0);
    for (int b = 0; hole_zero && hole < size && b < PAGE; b++) hole_zero = page[b] == 0;
    int data_same = pread_page(path[s % files], page_offset(s % written, size), page) == 0 &&
                    memcmp(page, changed + page_offset(s % written, size), PAGE) == 0;
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
  for (int f = 0; f < files; f++) unlink(path[f]);
  printf("done\n");
  return 0;
}
