/* The lower-half program's malloc (lower_program.c): every block its own mmap, so this half
 * never moves the process's one brk, which the upper half's libc owns (README.md). glibc and
 * every library of this half allocate through these, being defined in the executable; glibc
 * asks that the whole family be replaced together. Simple on purpose: an MPI library allocates
 * mostly at start-up and in pools. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

enum { PAGE = 4096 };

/* Just below every block the caller gets: where its mapping starts and how long it is. */
typedef struct BlockHeader {
  unsigned char *mapping;
  size_t length;
} BlockHeader;

static void *allocate(size_t size, size_t alignment) {
  if (alignment < sizeof(BlockHeader)) alignment = sizeof(BlockHeader);
  if (size > SIZE_MAX / 2 || alignment > SIZE_MAX / 4) {
    errno = ENOMEM;
    return NULL;
  }
  size_t length = (size + alignment + sizeof(BlockHeader) + PAGE - 1) & ~(size_t)(PAGE - 1);
  unsigned char *mapping = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t user = ((uintptr_t)mapping + sizeof(BlockHeader) + alignment - 1) & ~(uintptr_t)(alignment - 1);
  BlockHeader *header = (BlockHeader *)user - 1;
  header->mapping = mapping;
  header->length = length;
  return (void *)user;
}

static size_t usable(void *pointer) {
  BlockHeader *header = (BlockHeader *)pointer - 1;
  return header->length - (size_t)((unsigned char *)pointer - header->mapping);
}

void *malloc(size_t size) { return allocate(size, 16); }

void free(void *pointer) {
  if (!pointer) return;
  BlockHeader *header = (BlockHeader *)pointer - 1;
  munmap(header->mapping, header->length);
}

void *calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return allocate(count * size, 16); /* fresh anonymous pages are zero */
}

void *realloc(void *pointer, size_t size) {
  if (!pointer) return malloc(size);
  if (size == 0) {
    free(pointer);
    return NULL;
  }
  size_t old = usable(pointer);
  if (size <= old) return pointer;
  void *moved = malloc(size);
  if (moved) {
    memcpy(moved, pointer, old);
    free(pointer);
  }
  return moved;
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment % sizeof(void *)) return EINVAL;
  void *pointer = allocate(size, alignment);
  if (!pointer) return ENOMEM;
  *result = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1))) {
    errno = EINVAL;
    return NULL;
  }
  return allocate(size, alignment);
}

void *memalign(size_t alignment, size_t size) { return aligned_alloc(alignment, size); }
void *valloc(size_t size) { return allocate(size, PAGE); }
void *pvalloc(size_t size) { return allocate((size + PAGE - 1) & ~(size_t)(PAGE - 1), PAGE); }
size_t malloc_usable_size(void *pointer) { return pointer ? usable(pointer) : 0; }
