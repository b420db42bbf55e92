/* Helpers of the mapped-restart targets (mapped_*.c). */
#ifndef STASIS_TEST_MAPPED_COMMON_H
#define STASIS_TEST_MAPPED_COMMON_H

#include <sys/mman.h>

#include "target_common.h" /* first: defines _GNU_SOURCE */

#define MIB (1024L * 1024L)

/* Whether any page of [buf, buf + len) is mapped from a *.stasis file (after a mapped restart). */
static int backed_by_image(const void *buf, size_t len) {
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK(maps != NULL);
  char line[512];
  int found = 0;
  unsigned long from = (unsigned long)buf, to = from + len;
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end;
    if (sscanf(line, "%lx-%lx", &start, &end) != 2) continue;
    if (end > from && start < to && strstr(line, ".stasis")) found = 1;
  }
  fclose(maps);
  return found;
}

/* Says so on stderr, once per run, when the buffer is image-backed: the tests check that the
 * restart did map it (else they would pass without testing anything). */
static void report_if_backed_by_image(const char *program, const void *buf, size_t len) {
  static int reported;
  if (!reported && backed_by_image(buf, len)) {
    fprintf(stderr, "%s: buffer mapped from a checkpoint image\n", program);
    reported = 1;
  }
}

/* Pseudo-random bytes, never an all-zero page (images leave those out). */
static void fill(unsigned char *p, size_t len, uint64_t seed) {
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = splitmix64(&seed) | 1;
    memcpy(p + i, &v, 8);
  }
}

#endif
