/* sysv_nattch: the attachment count a program reads (shmctl IPC_STAT's shm_nattch) must not change
 * because of a checkpoint: a forked image writer lives on after the program resumes, and it must
 * not hold the program's attachments then.
 * usage: sysv_nattch [STEPS=40] [POLLS=25] [KEY=0x5157a003]
 * A keyed segment is attached twice, one attachment split in two by mprotect (the kernel counts
 * 3). 8 MiB of varied data keep a forked writer busy for a while after each resume. Every step
 * reads shm_nattch POLLS times, 2 ms apart, and prints a line for each reading that is not 3;
 * the output of a run with live checkpoints must equal an uninterrupted run's. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <sys/shm.h>

#define SEGMENT_SIZE (4 * 4096)
#define BUSY_BYTES (8u << 20)

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long polls = arg_long(argc, argv, 2, 25);
  key_t key = (key_t)arg_long(argc, argv, 3, 0x5157a003);

  int id = shmget(key, SEGMENT_SIZE, IPC_CREAT | IPC_EXCL | 0600);
  CHECK(id >= 0);
  unsigned char *rw = shmat(id, NULL, 0), *ro = shmat(id, NULL, SHM_RDONLY);
  CHECK(rw != (void *)-1 && ro != (void *)-1);
  CHECK(mprotect(rw + 2 * 4096, 2 * 4096, PROT_READ) == 0); /* two mappings: counted twice */
  const unsigned long expected = 3;

  uint64_t seed = 11;
  uint64_t *busy = malloc(BUSY_BYTES);
  CHECK(busy != NULL);
  for (size_t i = 0; i < BUSY_BYTES / 8; i++) busy[i] = splitmix64(&seed);

  unsigned long off = 0;
  for (long step = 1; step <= steps; step++) {
    rw[step % (2 * 4096)] = (unsigned char)step;
    for (long p = 0; p < polls; p++) {
      struct shmid_ds ds;
      CHECK(shmctl(id, IPC_STAT, &ds) == 0);
      if (ds.shm_nattch != expected) {
        off++;
        printf("step %ld: attach count %lu instead of %lu\n", step, (unsigned long)ds.shm_nattch, expected);
      }
      sleep_ms(2);
    }
    printf("step %ld segment %016llx busy %016llx\n", step,
           (unsigned long long)fnv1a(FNV_INIT, ro, SEGMENT_SIZE),
           (unsigned long long)fnv1a(FNV_INIT, busy, 4096));
  }
  CHECK(shmdt(rw) == 0 && shmdt(ro) == 0 && shmctl(id, IPC_RMID, NULL) == 0);
  printf("done: %lu readings off\n", off);
  return 0;
}
