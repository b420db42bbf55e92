/* lower_allocator_check: the lower-half program's malloc family (../lower_allocator.c), linked in
 * place of glibc's as in stasis-mpi-lower-IMPL: alignment, contents kept by realloc, zeroed
 * calloc, usable sizes, and that the break never moves (the brk heap is the upper half's).
 * Prints "lower allocator ok" and exits 0, or exits 2 naming the failed check. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "split_test_common.h"

int main(void) {
  void *break_before = sbrk(0);
  char *text = malloc(10);
  CHECK(text && (uintptr_t)text % 16 == 0 && malloc_usable_size(text) >= 10);
  strcpy(text, "123456789");
  text = realloc(text, 100000);
  CHECK(text && strcmp(text, "123456789") == 0 && malloc_usable_size(text) >= 100000);
  unsigned char *zeros = calloc(1000, 100);
  CHECK(zeros);
  for (int i = 0; i < 100000; i++) CHECK(zeros[i] == 0);
  for (size_t alignment = sizeof(void *); alignment <= 1 << 20; alignment *= 2) {
    void *aligned = NULL;
    CHECK(posix_memalign(&aligned, alignment, 3 * alignment + 1) == 0);
    CHECK((uintptr_t)aligned % alignment == 0 && malloc_usable_size(aligned) >= 3 * alignment + 1);
    memset(aligned, 0xab, 3 * alignment + 1);
    free(aligned);
    void *other = aligned_alloc(alignment, alignment);
    CHECK(other && (uintptr_t)other % alignment == 0);
    free(other);
  }
  void *refused = NULL;
  CHECK(posix_memalign(&refused, 24, 10) != 0);
  volatile size_t huge = SIZE_MAX / 2; /* volatile: the compiler would refuse the constant product */
  CHECK(calloc(huge, 4) == NULL);
  CHECK(realloc(text, 0) == NULL);
  free(zeros);
  free(NULL);
  /* Everything above (and stdio's buffer below) came from mmap, never from the break. */
  printf("lower allocator ok\n");
  fflush(stdout);
  CHECK(sbrk(0) == break_before);
  return 0;
}
