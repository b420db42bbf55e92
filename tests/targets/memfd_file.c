/* memfd_file: memfds whose name, contents, offset, flags, seals and shared mappings must survive
 * a checkpoint.
 *   "journal"  MFD_ALLOW_SEALING | MFD_CLOEXEC, sealed against shrinking (F_SEAL_SHRINK): records
 *              are written through it, a MAP_SHARED view of its first page holds counters that
 *              are read back through the descriptor with pread
 *   "plain"    no flags (so F_SEAL_SEAL is set and adding seals fails), read sequentially
 *   "ring"     64 KiB, mapped MAP_SHARED, its descriptor closed: only the mapping holds it
 * Each step prints offsets, seals, whether shrinking is refused, the name behind the descriptor,
 * close-on-exec, and checksums of what is read back.
 * usage: memfd_file [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096
#define RING (64 * 1024)

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);

  int journal = memfd_create("journal", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  CHECK(journal >= 0);
  CHECK(ftruncate(journal, PAGE) == 0);
  CHECK(lseek(journal, PAGE, SEEK_SET) == PAGE);
  CHECK(fcntl(journal, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
  uint64_t *counters = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, journal, 0);
  CHECK(counters != MAP_FAILED);

  int plain = memfd_create("plain", 0);
  CHECK(plain >= 0);
  uint64_t seed = 99;
  for (int i = 0; i < 200; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "plain %04d %016llx\n", i, (unsigned long long)splitmix64(&seed));
    CHECK(write(plain, line, (size_t)n) == n);
  }
  CHECK(lseek(plain, 0, SEEK_SET) == 0);
  int plain_seal = fcntl(plain, F_ADD_SEALS, F_SEAL_GROW);
  printf("plain: adding a seal %s (errno %d)\n", plain_seal == 0 ? "worked" : "failed", plain_seal == 0 ? 0 : errno);

  int ring_fd = memfd_create("ring", MFD_CLOEXEC);
  CHECK(ring_fd >= 0);
  CHECK(ftruncate(ring_fd, RING) == 0);
  unsigned char *ring = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
  CHECK(ring != MAP_FAILED);
  CHECK(close(ring_fd) == 0);

  uint64_t sum = FNV_INIT, rng = 5;
  for (long step = 1; step <= steps; step++) {
    char rec[64];
    int n = snprintf(rec, sizeof rec, "record %06ld %016llx\n", step, (unsigned long long)sum);
    CHECK(write(journal, rec, (size_t)n) == n);
    counters[step % 16] += (uint64_t)step * 3;
    uint64_t seen = 0;
    CHECK(pread(journal, &seen, sizeof seen, (step % 16) * 8) == sizeof seen);

    char buf[64];
    ssize_t got = read(plain, buf, 41);
    CHECK(got >= 0);
    sum = fnv1a(sum, buf, (size_t)got);

    uint64_t v = splitmix64(&rng);
    ring[v % RING] = (unsigned char)(v >> 32);
    sum = fnv1a(sum, ring, RING);

    struct stat st;
    CHECK(fstat(journal, &st) == 0);
    int shrink = ftruncate(journal, PAGE / 2);
    int journal_seals = fcntl(journal, F_GET_SEALS), plain_seals = fcntl(plain, F_GET_SEALS);
    char link[128] = "", proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", journal);
    ssize_t len = readlink(proc_path, link, sizeof link - 1);
    CHECK(len > 0);
    link[len] = 0;
    printf("step %ld off %lld %lld size %lld seals %#x %#x shrink %s cloexec %d %d %s seen %llu sum %016llx\n",
           step, (long long)lseek(journal, 0, SEEK_CUR), (long long)lseek(plain, 0, SEEK_CUR),
           (long long)st.st_size, journal_seals, plain_seals, shrink == 0 ? "allowed" : "refused",
           (fcntl(journal, F_GETFD) & FD_CLOEXEC) != 0, (fcntl(plain, F_GETFD) & FD_CLOEXEC) != 0, link,
           (unsigned long long)seen, (unsigned long long)sum);
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)sum);
  return 0;
}
