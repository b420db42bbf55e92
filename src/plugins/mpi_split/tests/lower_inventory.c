/* lower_inventory MIN_LOWER_THREADS: run as the upper half of stasis-mpi-lower-IMPL. After MPI is
 * up and has carried messages, asks the lower half what it owns (STASIS_MPI_Lower_inventory: what
 * a split checkpoint will leave out) and checks it against /proc/self/maps: every range is
 * mapped (nothing stale, which could later cover upper memory); no file's mapping straddles the
 * line between the halves; everything of the upper half (every object of its link map, its brk heap,
 * its stack, its large malloc blocks, a mapping it made) lies outside; every mapping of the MPI
 * library's files and of shared memory lies inside; the lower half's threads are live threads of
 * this process and none is the program's; every socket and epoll descriptor (the program has
 * none) is listed as the lower half's, the standard streams and the program's own file and pipe
 * are not. Ends with "lower_inventory ok" on rank 0. */
#define _GNU_SOURCE
#include <dirent.h>
#include <link.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "split_test_common.h"

enum { RANGE_CAPACITY = 65536, TID_CAPACITY = 64 };
static unsigned long long ranges[2 * RANGE_CAPACITY];
static int range_count;

/* 1: [start, end) lies inside the lower half's ranges; 0: wholly outside; -1: partly. */
static int lower_part(uint64_t start, uint64_t end) {
  uint64_t covered = 0;
  for (int i = 0; i < range_count; i++) {
    uint64_t from = ranges[2 * i] > start ? ranges[2 * i] : start;
    uint64_t to = ranges[2 * i + 1] < end ? ranges[2 * i + 1] : end;
    if (to > from) covered += to - from;
  }
  return covered == 0 ? 0 : covered == end - start ? 1 : -1;
}

static void check_upper(const char *what, const void *address, size_t bytes) {
  uint64_t start = (uint64_t)address & ~4095ull, end = ((uint64_t)address + bytes + 4095) & ~4095ull;
  if (lower_part(start, end) != 0) {
    fprintf(stderr, "upper half's %s at %#llx-%#llx is listed as the lower half's\n", what,
            (unsigned long long)start, (unsigned long long)end);
    exit(2);
  }
}

static int check_upper_object(struct dl_phdr_info *object, size_t size, void *unused) {
  (void)size, (void)unused;
  for (int i = 0; i < object->dlpi_phnum; i++) {
    if (object->dlpi_phdr[i].p_type != PT_LOAD) continue;
    char what[300];
    snprintf(what, sizeof what, "segment of %s", object->dlpi_name[0] ? object->dlpi_name : "the program");
    check_upper(what, (const void *)(object->dlpi_addr + object->dlpi_phdr[i].p_vaddr), object->dlpi_phdr[i].p_memsz);
  }
  return 0;
}

/* Files only the lower half maps: the MPI libraries, their components and transports, the
 * lower-half program, shared memory. */
static int lower_only_file(const char *path) {
  static const char *const marks[] = {"libmpi", "libopen-pal", "libopen-rte", "/mca_", "libpmix", "libhwloc", "libevent",
                                      "libucp", "libucs", "libuct", "libucm", "libfabric", "stasis-mpi-lower-", "/dev/shm/", "/SYSV"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (strstr(path, marks[i])) return 1;
  return 0;
}

/* Every mapping is one half's; the lower half's ranges are all mapped. 1, or 0 with `fault`. */
static int matches_maps(uint64_t lower_bytes, uint64_t *upper_bytes, int *lower_files, char *fault,
                        size_t fault_size) {
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK(maps);
  char line[4096];
  uint64_t mapped_lower = 0;
  *upper_bytes = 0;
  *lower_files = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long long start, end;
    int path_at = 0;
    CHECK(sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &path_at) >= 2);
    char *path = path_at ? line + path_at : line + strlen(line);
    path[strcspn(path, "\n")] = '\0';
    if (strcmp(path, "[vdso]") == 0 || strcmp(path, "[vvar]") == 0 || strcmp(path, "[vsyscall]") == 0) continue;
    /* The kernel joins neighbouring anonymous mappings of both halves into one; a file's
     * mapping is one half's. */
    int part = lower_part(start, end);
    if (part < 0 && path[0]) {
      snprintf(fault, fault_size, "mapping %llx-%llx %s is partly the lower half's", start, end, path);
      fclose(maps);
      return 0;
    }
    if (lower_only_file(path)) {
      (*lower_files)++;
      if (part != 1) {
        snprintf(fault, fault_size, "lower half's mapping %llx-%llx %s is not in its inventory", start, end, path);
        fclose(maps);
        return 0;
      }
    }
    uint64_t lower_here = 0;
    for (int i = 0; i < range_count; i++) {
      uint64_t from = ranges[2 * i] > start ? ranges[2 * i] : start;
      uint64_t to = ranges[2 * i + 1] < end ? ranges[2 * i + 1] : end;
      if (to > from) lower_here += to - from;
    }
    mapped_lower += lower_here;
    *upper_bytes += end - start - lower_here;
  }
  fclose(maps);
  if (mapped_lower != lower_bytes) {
    snprintf(fault, fault_size, "the inventory lists %llu bytes, of which only %llu are mapped",
             (unsigned long long)lower_bytes, (unsigned long long)mapped_lower);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  MPI_OK(MPI_Init(&argc, &argv));
  int min_threads = argc > 1 ? atoi(argv[1]) : 0;
  int rank, size;
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  static char out[1 << 16], in[1 << 16];
  for (int round = 0; round < 20; round++) {
    memset(out, rank + round, sizeof out);
    MPI_OK(MPI_Sendrecv(out, sizeof out, MPI_BYTE, (rank + 1) % size, round, in, sizeof in, MPI_BYTE,
                        (rank + size - 1) % size, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(in[0] == (char)((rank + size - 1) % size + round));
  }
  MPI_Comm half;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
  MPI_OK(MPI_Barrier(half));

  /* The upper half's own memory, made after the lower half's: the inventory must not claim it. */
  char *small = malloc(64), *large = malloc(4 << 20);
  void *mapped = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(small && large && mapped != MAP_FAILED);
  memset(large, 1, 4 << 20);

  static int tids[TID_CAPACITY];
  int tid_count = 0;
  MPI_OK(STASIS_MPI_Lower_inventory(ranges, RANGE_CAPACITY, &range_count, tids, TID_CAPACITY, &tid_count));
  CHECK(range_count > 0);
  uint64_t lower_bytes = 0;
  for (int i = 0; i < range_count; i++) {
    CHECK(ranges[2 * i] < ranges[2 * i + 1] && ranges[2 * i] % 4096 == 0 && ranges[2 * i + 1] % 4096 == 0);
    CHECK(i == 0 || ranges[2 * i - 1] < ranges[2 * i]);
    lower_bytes += ranges[2 * i + 1] - ranges[2 * i];
  }

  check_upper("small malloc block (brk heap)", small, 64);
  check_upper("large malloc block", large, 4 << 20);
  check_upper("mapping", mapped, 1 << 20);
  int on_stack;
  check_upper("stack", &on_stack, sizeof on_stack);
  dl_iterate_phdr(check_upper_object, NULL);

  /* The lower half's own threads may map or unmap memory (a transport's segment) between the
   * inventory and the read of /proc/self/maps: a mismatch is taken again, and a fault only if
   * it stays. */
  uint64_t upper_bytes = 0;
  int lower_files = 0;
  char fault[512];
  for (int attempt = 1; !matches_maps(lower_bytes, &upper_bytes, &lower_files, fault, sizeof fault); attempt++) {
    if (attempt == 3) {
      fprintf(stderr, "rank %d: %s (3 inventories)\n", rank, fault);
      exit(2);
    }
    fprintf(stderr, "rank %d: %s; the inventory is taken again\n", rank, fault);
    MPI_OK(STASIS_MPI_Lower_inventory(ranges, RANGE_CAPACITY, &range_count, tids, TID_CAPACITY, &tid_count));
    lower_bytes = 0;
    for (int i = 0; i < range_count; i++) lower_bytes += ranges[2 * i + 1] - ranges[2 * i];
  }
  CHECK(lower_files > 0);

  /* Descriptors: the lower half's sockets, event and epoll descriptors are listed; the program's
   * own file and pipe, and the standard streams, are not. */
  int own_pipe[2];
  CHECK(pipe(own_pipe) == 0);
  FILE *own_file = tmpfile();
  CHECK(own_file);
  static int fds[4096];
  int fd_count = 0, lower_sockets = 0;
  MPI_OK(STASIS_MPI_Lower_descriptors(fds, 4096, &fd_count));
  for (int i = 0; i < fd_count; i++) {
    CHECK(fds[i] > 2 && fds[i] != own_pipe[0] && fds[i] != own_pipe[1] && fds[i] != fileno(own_file));
    CHECK(i == 0 || fds[i - 1] < fds[i]);
  }
  DIR *open_fds = opendir("/proc/self/fd");
  CHECK(open_fds);
  for (struct dirent *entry; (entry = readdir(open_fds));) {
    char path[300], target[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
    ssize_t length = readlink(path, target, sizeof target - 1);
    if (entry->d_name[0] == '.' || length <= 0) continue;
    target[length] = '\0';
    int fd = atoi(entry->d_name), listed = 0;
    for (int i = 0; i < fd_count; i++) listed |= fds[i] == fd;
    if (strncmp(target, "socket:", 7) == 0 || strcmp(target, "anon_inode:[eventpoll]") == 0) {
      if (!listed) {
        fprintf(stderr, "descriptor %d (%s) is the lower half's but not listed\n", fd, target);
        exit(2);
      }
      lower_sockets++;
    }
  }
  closedir(open_fds);
  CHECK(lower_sockets > 0 || min_threads == 0);

  int self = (int)syscall(SYS_gettid);
  CHECK(tid_count >= min_threads);
  for (int i = 0; i < tid_count; i++) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", tids[i]);
    CHECK(access(path, F_OK) == 0);
    CHECK(tids[i] != getpid() && tids[i] != self);
  }
  printf("rank %d: lower half %d ranges, %llu KiB, %d files' mappings, %d threads, %d descriptors (%d sockets "
         "and epoll); upper half %llu KiB\n", rank, range_count, (unsigned long long)lower_bytes >> 10, lower_files,
         tid_count, fd_count, lower_sockets, (unsigned long long)upper_bytes >> 10);
  fflush(stdout);
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_OK(MPI_Comm_free(&half));
  MPI_OK(MPI_Finalize());
  if (rank == 0) printf("lower_inventory ok\n");
  return 0;
}
