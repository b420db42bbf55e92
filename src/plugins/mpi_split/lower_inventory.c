/* What the lower-half program owns (lower_inventory.h, README.md: Where the lower half lives).
 * Every mapping that exists when main starts is this half's; later ones are noted by this
 * executable's mmap, munmap and mremap, which this half's libc and libraries reach (the
 * executable exports them, as it does malloc), and the libraries its libc loads later (MPI
 * components) are read from its link map at each inventory. Threads get their stacks from this
 * half's mmap, so glibc's own stack allocation (an internal mmap) never makes an untracked one.
 * What this half's libc maps through its internal calls only (none seen with Open MPI or MPICH)
 * would count as the upper half's: saved for nothing, never lost. The opposite error, upper memory
 * taken for this half's, is what must never happen: ranges are taken out as soon as this half
 * unmaps them, and a table that overflows makes every inventory fail. */
#define _GNU_SOURCE
#include "lower_inventory.h"
#include "program_loader.h"

#include "common/raw_syscall.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { PAGE = 4096, RANGE_CAPACITY = 16384, THREAD_CAPACITY = 64, DEFAULT_STACK_BYTES = 8 << 20 };
#define PAGE_DOWN(x) ((uint64_t)(x) & ~(uint64_t)(PAGE - 1))
#define PAGE_UP(x) PAGE_DOWN((uint64_t)(x) + PAGE - 1)

static StasisMpiLowerRange tracked[RANGE_CAPACITY];
static int tracked_count;
static int lost_track; /* a range did not fit: no inventory can be trusted any more */
static atomic_flag tracked_lock = ATOMIC_FLAG_INIT;
static _Atomic int thread_ids[THREAD_CAPACITY];
static _Atomic int threads_lost; /* a thread did not fit in thread_ids */

static void lock_tracked(void) {
  while (atomic_flag_test_and_set_explicit(&tracked_lock, memory_order_acquire)) sched_yield();
}
static void unlock_tracked(void) { atomic_flag_clear_explicit(&tracked_lock, memory_order_release); }

/* The first range of a sorted, disjoint list that ends after `address`. */
static int first_ending_after(const StasisMpiLowerRange *list, int count, uint64_t address) {
  int low = 0, high = count;
  while (low < high) {
    int middle = low + (high - low) / 2;
    if (list[middle].end <= address) low = middle + 1;
    else high = middle;
  }
  return low;
}

/* Takes [start, end) out of a sorted, disjoint list; -1 when a split does not fit. */
static int remove_range(StasisMpiLowerRange *list, int *count, int capacity, uint64_t start, uint64_t end) {
  int i = first_ending_after(list, *count, start);
  while (i < *count && list[i].start < end) {
    StasisMpiLowerRange *range = &list[i];
    if (range->start < start && range->end > end) {
      if (*count == capacity) return -1;
      memmove(&list[i + 2], &list[i + 1], (size_t)(*count - i - 1) * sizeof *list);
      list[i + 1] = (StasisMpiLowerRange){end, range->end};
      range->end = start;
      (*count)++;
      return 0;
    }
    if (range->start < start) {
      range->end = start;
      i++;
    } else if (range->end > end) {
      range->start = end;
      return 0;
    } else {
      memmove(&list[i], &list[i + 1], (size_t)(*count - i - 1) * sizeof *list);
      (*count)--;
    }
  }
  return 0;
}

/* Adds [start, end) to a sorted, disjoint list, joined with the ranges it touches; -1 when full. */
static int add_range(StasisMpiLowerRange *list, int *count, int capacity, uint64_t start, uint64_t end) {
  if (start >= end) return 0;
  if (remove_range(list, count, capacity, start, end) != 0) return -1;
  int i = first_ending_after(list, *count, start);
  int joins_previous = i > 0 && list[i - 1].end == start;
  int joins_next = i < *count && list[i].start == end;
  if (joins_previous && joins_next) {
    list[i - 1].end = list[i].end;
    memmove(&list[i], &list[i + 1], (size_t)(*count - i - 1) * sizeof *list);
    (*count)--;
  } else if (joins_previous) {
    list[i - 1].end = end;
  } else if (joins_next) {
    list[i].start = start;
  } else {
    if (*count == capacity) return -1;
    memmove(&list[i + 1], &list[i], (size_t)(*count - i) * sizeof *list);
    list[i] = (StasisMpiLowerRange){start, end};
    (*count)++;
  }
  return 0;
}

static void note_mapped(const void *address, size_t length) {
  lock_tracked();
  if (add_range(tracked, &tracked_count, RANGE_CAPACITY, PAGE_DOWN(address), PAGE_UP((uint64_t)address + length)))
    lost_track = 1;
  unlock_tracked();
}

static void note_unmapped(const void *address, size_t length) {
  lock_tracked();
  if (remove_range(tracked, &tracked_count, RANGE_CAPACITY, PAGE_DOWN(address), PAGE_UP((uint64_t)address + length)))
    lost_track = 1;
  unlock_tracked();
}

void stasis_mpi_inventory_add(uint64_t start, uint64_t end) { note_mapped((void *)start, end - start); }

int stasis_mpi_inventory_start(char *error, size_t error_size) {
  static char maps[1 << 18];
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t used = 0;
  ssize_t got = 0;
  while (fd >= 0 && used < sizeof maps - 1 && (got = read(fd, maps + used, sizeof maps - 1 - used)) > 0)
    used += (size_t)got;
  if (fd >= 0) close(fd);
  if (fd < 0 || got < 0 || used == sizeof maps - 1) {
    snprintf(error, error_size, "/proc/self/maps: %s", fd < 0 || got < 0 ? strerror(errno) : "too long to read");
    return -1;
  }
  maps[used] = '\0';
  for (char *line = maps; *line; ) {
    char *next = strchr(line, '\n');
    if (next) *next = '\0';
    unsigned long long start, end;
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &path_at) >= 2) {
      const char *path = path_at ? line + path_at : "";
      /* The kernel's pages are both halves' (the restart loader moves them); the brk heap is the
       * upper half's, since this half allocates on mmap only (lower_allocator.c). */
      int shared_by_both = strcmp(path, "[vdso]") == 0 || strcmp(path, "[vvar]") == 0 ||
                           strcmp(path, "[vvar_vclock]") == 0 || strcmp(path, "[vsyscall]") == 0;
      if (!shared_by_both && strcmp(path, "[heap]") != 0 &&
          add_range(tracked, &tracked_count, RANGE_CAPACITY, start, end) != 0) {
        snprintf(error, error_size, "/proc/self/maps: more than %d ranges", RANGE_CAPACITY);
        return -1;
      }
    }
    if (!next) break;
    line = next + 1;
  }
  return 0;
}

/* The upper half's program, interpreter and stack (program_loader.c): never this half's. */
void *stasis_mpi_loader_mmap(void *address, size_t length, int prot, int flags, int fd, long offset) {
  long made = STASIS_SYS6(SYS_mmap, address, length, prot, flags, fd, offset);
  if (made < 0 && made > -4096) {
    errno = (int)-made;
    return MAP_FAILED;
  }
  return (void *)made;
}

/* System V segments this half attaches (UCX's sysv transport under MPICH): the size is the
 * segment's, and shmdt names only the address, so each attachment is remembered. */
enum { ATTACHMENT_CAPACITY = 256 };
static struct {
  uint64_t address, bytes;
} attachments[ATTACHMENT_CAPACITY];

static void note_attached(int id, uint64_t address) {
  struct shmid_ds segment;
  if (STASIS_SYS3(SYS_shmctl, id, IPC_STAT, &segment) != 0) {
    lost_track = 1;
    return;
  }
  note_mapped((void *)address, segment.shm_segsz);
  lock_tracked();
  int kept = 0;
  for (int i = 0; i < ATTACHMENT_CAPACITY && !kept; i++)
    if (!attachments[i].address) {
      attachments[i].address = address;
      attachments[i].bytes = segment.shm_segsz;
      kept = 1;
    }
  if (!kept) lost_track = 1;
  unlock_tracked();
}

static void note_detached(uint64_t address) {
  uint64_t bytes = 0;
  lock_tracked();
  for (int i = 0; i < ATTACHMENT_CAPACITY; i++)
    if (attachments[i].address == address) {
      bytes = attachments[i].bytes;
      attachments[i].address = 0;
      break;
    }
  unlock_tracked();
  if (bytes) note_unmapped((void *)address, bytes);
}

/* Every system call this half makes through the functions below, each mapping change noted.
 * UCX calls syscall(SYS_mmap, ...) and syscall(SYS_shmat, ...) itself, past mmap and shmat. */
long stasis_mpi_lower_system_call(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
  long rc = stasis_syscall6(number, a1, a2, a3, a4, a5, a6);
  if (rc < 0 && rc > -4096) return rc;
  stasis_mpi_note_descriptor_call(number, rc, a1, a4);
  switch (number) {
    case SYS_mmap: note_mapped((void *)rc, (size_t)a2); break;
    case SYS_munmap: note_unmapped((void *)a1, (size_t)a2); break;
    case SYS_mremap:
      note_unmapped((void *)a1, (size_t)a2);
      note_mapped((void *)rc, (size_t)a3);
      break;
    case SYS_shmat: note_attached((int)a1, (uint64_t)rc); break;
    case SYS_shmdt: note_detached((uint64_t)a1); break;
    default: break;
  }
  return rc;
}

long stasis_mpi_with_errno(long rc) {
  if (rc < 0 && rc > -4096) {
    errno = (int)-rc;
    return -1;
  }
  return rc;
}

long syscall(long number, ...) {
  va_list arguments;
  va_start(arguments, number);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(arguments, long);
  va_end(arguments);
  return stasis_mpi_with_errno(stasis_mpi_lower_system_call(number, a[0], a[1], a[2], a[3], a[4], a[5]));
}

void *mmap(void *address, size_t length, int prot, int flags, int fd, off_t offset) {
  return (void *)stasis_mpi_with_errno(
      stasis_mpi_lower_system_call(SYS_mmap, (long)address, (long)length, prot, flags, fd, (long)offset));
}
void *mmap64(void *address, size_t length, int prot, int flags, int fd, off_t offset)
    __attribute__((alias("mmap")));

int munmap(void *address, size_t length) {
  return (int)stasis_mpi_with_errno(stasis_mpi_lower_system_call(SYS_munmap, (long)address, (long)length, 0, 0, 0, 0));
}

void *mremap(void *old_address, size_t old_length, size_t new_length, int flags, ...) {
  void *new_address = NULL;
  if (flags & MREMAP_FIXED) {
    va_list arguments;
    va_start(arguments, flags);
    new_address = va_arg(arguments, void *);
    va_end(arguments);
  }
  return (void *)stasis_mpi_with_errno(stasis_mpi_lower_system_call(SYS_mremap, (long)old_address, (long)old_length, (long)new_length,
                                              flags, (long)new_address, 0));
}

void *shmat(int id, const void *address, int flags) {
  return (void *)stasis_mpi_with_errno(stasis_mpi_lower_system_call(SYS_shmat, id, (long)address, flags, 0, 0, 0));
}

int shmdt(const void *address) { return (int)stasis_mpi_with_errno(stasis_mpi_lower_system_call(SYS_shmdt, (long)address, 0, 0, 0, 0, 0)); }

/* Threads: each runs from start_lower_thread, which lists its id for as long as it runs. */
typedef struct ThreadStart {
  void *(*routine)(void *);
  void *argument;
  _Atomic int listed; /* set by the new thread once listed and exempted; its creator then frees this */
} ThreadStart;

/* The upper half's, called on this half's threads (so it must use no TLS): exempts them from the
 * checkpoint's stop. */
static int (*_Atomic thread_hook)(int tid, int exempt);

void stasis_mpi_lower_set_thread_hook(int (*hook)(int tid, int exempt)) { thread_hook = hook; }

static void forget_thread(void *id) {
  int (*hook)(int, int) = thread_hook;
  if (hook) hook((int)(intptr_t)id, 0);
  for (int i = 0; i < THREAD_CAPACITY; i++) {
    int expected = (int)(intptr_t)id;
    if (atomic_compare_exchange_strong(&thread_ids[i], &expected, 0)) return;
  }
}

static void *start_lower_thread(void *argument) {
  ThreadStart *given = argument;
  ThreadStart start = {given->routine, given->argument, 0};
  int id = (int)STASIS_SYS0(SYS_gettid), listed = 0;
  for (int i = 0; i < THREAD_CAPACITY && !listed; i++) {
    int expected = 0;
    listed = atomic_compare_exchange_strong(&thread_ids[i], &expected, id);
  }
  if (!listed) threads_lost = 1;
  int (*hook)(int, int) = thread_hook;
  if (hook && hook(id, 1) != 0) threads_lost = 1;
  atomic_store(&given->listed, 1); /* `given` is the creator's from here on */
  void *result;
  pthread_cleanup_push(forget_thread, (void *)(intptr_t)id);
  result = start.routine(start.argument);
  pthread_cleanup_pop(1);
  return result;
}

typedef int (*PthreadCreate)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument) {
  static PthreadCreate real_create;
  if (!real_create) real_create = (PthreadCreate)dlsym(RTLD_NEXT, "pthread_create");
  if (!real_create) return EAGAIN;
  pthread_attr_t own;
  if (attributes) memcpy(&own, attributes, sizeof own); /* shares glibc's extension: never destroyed */
  else pthread_attr_init(&own);
  void *stack = NULL;
  size_t stack_bytes = 0;
  pthread_attr_getstack(&own, &stack, &stack_bytes);
  if (!stack) {
    /* The stack from this half's mmap (tracked), with a guard page below it. Kept when the
     * thread ends: an MPI library's threads live as long as the process. */
    if (pthread_attr_getstacksize(&own, &stack_bytes) != 0 || stack_bytes < (size_t)PTHREAD_STACK_MIN)
      stack_bytes = DEFAULT_STACK_BYTES;
    stack_bytes = PAGE_UP(stack_bytes);
    char *block = mmap(NULL, stack_bytes + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (block == MAP_FAILED) return EAGAIN;
    mprotect(block, PAGE, PROT_NONE);
    pthread_attr_setstack(&own, block + PAGE, stack_bytes);
  }
  ThreadStart *start = malloc(sizeof *start);
  if (!start) return EAGAIN;
  *start = (ThreadStart){routine, argument, 0};
  /* The thread starts, and stays, with every signal blocked: the upper half's handlers (the
   * checkpoint's among them) must never run on this half's thread pointer. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = real_create(thread, &own, start_lower_thread, start);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  /* Returns once the thread is exempted: a thread made inside a call into this half is, before
   * the call ends, so before the checkpoint's safe point lets the checkpoint stop threads. */
  while (rc == 0 && !atomic_load(&start->listed)) sched_yield();
  free(start);
  return rc;
}

typedef struct LinkMapSpans {
  StasisMpiLowerRange *list;
  int *count, capacity, failed;
  uint64_t vdso;
} LinkMapSpans;

/* Each library of this half's link map, from its first segment to the end of its last (the
 * gaps between are its own reservation). */
static int add_link_map_span(struct dl_phdr_info *object, size_t size, void *data) {
  (void)size;
  LinkMapSpans *spans = data;
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < object->dlpi_phnum; i++) {
    const ElfW(Phdr) *segment = &object->dlpi_phdr[i];
    if (segment->p_type != PT_LOAD) continue;
    uint64_t start = object->dlpi_addr + segment->p_vaddr;
    if (start < low) low = start;
    if (start + segment->p_memsz > high) high = start + segment->p_memsz;
  }
  if (high == 0 || PAGE_DOWN(low) == spans->vdso) return 0;
  if (add_range(spans->list, spans->count, spans->capacity, PAGE_DOWN(low), PAGE_UP(high)) != 0) spans->failed = 1;
  return 0;
}

int stasis_mpi_lower_inventory(StasisMpiLowerRange *ranges, int range_capacity, int *range_count, int *tids,
                               int tid_capacity, int *tid_count) {
  *range_count = 0;
  *tid_count = 0;
  lock_tracked();
  int fits = !lost_track && tracked_count <= range_capacity;
  if (fits) {
    memcpy(ranges, tracked, (size_t)tracked_count * sizeof *ranges);
    *range_count = tracked_count;
  }
  unlock_tracked();
  if (!fits) return -1;
  LinkMapSpans spans = {ranges, range_count, range_capacity, 0, getauxval(AT_SYSINFO_EHDR)};
  dl_iterate_phdr(add_link_map_span, &spans);
  if (spans.failed || threads_lost) return -1;
  for (int i = 0; i < THREAD_CAPACITY; i++) {
    int id = thread_ids[i];
    if (!id) continue;
    if (*tid_count == tid_capacity) return -1;
    tids[(*tid_count)++] = id;
  }
  return 0;
}
