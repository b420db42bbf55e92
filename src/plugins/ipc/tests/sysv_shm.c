/* sysv_shm: System V shared memory across a checkpoint.
 * usage: sysv_shm [STEPS=40] [DELAY_MS=50] [KEY=0x5157a001] [syscall]
 * Segment A (keyed, 3 pages and a bit) is attached twice, read-write and SHM_RDONLY, with its
 * middle page made read-only by mprotect; B (private) is marked for removal while attached; C
 * (private) is only attached for a moment at each step. Every step writes all three and prints
 * what the other attachment reads and what shmctl says about each id; at the end A and C are
 * removed and B must vanish with its last detach. With "syscall", C is attached through
 * syscall(SYS_shmat), as UCX's memory hooks do: after a restart the id the program holds is only
 * valid if that call is translated too. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#define A_SIZE (3 * 4096 + 100)

static uint64_t sum(const unsigned char *p, size_t n) { return fnv1a(FNV_INIT, p, n); }

static void describe(const char *name, int id) {
  struct shmid_ds ds;
  CHECK(shmctl(id, IPC_STAT, &ds) == 0);
  printf(" %s: size %zu nattch %lu mode %o", name, (size_t)ds.shm_segsz, (unsigned long)ds.shm_nattch,
         ds.shm_perm.mode & 01777);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  key_t key = (key_t)arg_long(argc, argv, 3, 0x5157a001);
  int through_syscall = argc > 4 && strcmp(argv[4], "syscall") == 0;

  int a = shmget(key, A_SIZE, IPC_CREAT | IPC_EXCL | 0640);
  CHECK(a >= 0);
  unsigned char *a_rw = shmat(a, NULL, 0), *a_ro = shmat(a, NULL, SHM_RDONLY);
  CHECK(a_rw != (void *)-1 && a_ro != (void *)-1);
  CHECK(mprotect(a_rw + 4096, 4096, PROT_READ) == 0);
  int b = shmget(IPC_PRIVATE, 8192, 0600);
  CHECK(b >= 0);
  unsigned char *b_rw = shmat(b, NULL, 0);
  CHECK(b_rw != (void *)-1);
  CHECK(shmctl(b, IPC_RMID, NULL) == 0); /* gone once detached */
  int c = shmget(IPC_PRIVATE, 5000, 0604);
  CHECK(c >= 0);

  uint64_t seed = 7;
  for (long step = 1; step <= steps; step++) {
    for (int i = 0; i < 64; i++) {
      uint64_t v = splitmix64(&seed);
      a_rw[v % 4096] = (unsigned char)v;
      a_rw[2 * 4096 + (v >> 20) % (A_SIZE - 2 * 4096)] = (unsigned char)(v >> 8);
      b_rw[(v >> 32) % 8192] = (unsigned char)(v >> 16);
    }
    unsigned char *c_rw = through_syscall ? (unsigned char *)syscall(SYS_shmat, c, NULL, 0) : shmat(c, NULL, 0);
    CHECK(c_rw != (void *)-1);
    c_rw[step % 5000] = (unsigned char)step;
    uint64_t c_sum = sum(c_rw, 5000);
    CHECK(shmdt(c_rw) == 0);
    CHECK(shmget(key, 0, 0) == a); /* the key still finds the id the program holds */
    printf("step %ld A %016llx B %016llx C %016llx", step, (unsigned long long)sum(a_ro, A_SIZE),
           (unsigned long long)sum(b_rw, 8192), (unsigned long long)c_sum);
    describe("A", a);
    describe("C", c);
    printf("\n");
    sleep_ms(delay);
  }
  CHECK(shmdt(a_rw) == 0 && shmdt(a_ro) == 0 && shmdt(b_rw) == 0);
  struct shmid_ds ds;
  int b_gone = shmctl(b, IPC_STAT, &ds) != 0 && (errno == EINVAL || errno == EIDRM);
  CHECK(shmctl(a, IPC_RMID, NULL) == 0 && shmctl(c, IPC_RMID, NULL) == 0);
  printf("done: B %s after its last detach\n", b_gone ? "removed" : "STILL THERE");
  return 0;
}
