/* sysv_shared: System V segments shared by two processes (a parent and its forked child) across a
 * checkpoint, attached by ids passed through pipes, as MPI ranks do with UCX's sysv transport.
 * usage: sysv_shared [STEPS=40] [DELAY_MS=50] [MODE]
 * After fork, the parent makes S1 and S2, the child S3; each sends its ids through a pipe.
 * S1 (the turn and a counter) is attached by both and marked for removal once the child has it:
 * it must vanish with the last detach at the end. S3 is attached by both, split into three
 * mappings by mprotect in the parent. S2 is written by the parent every step and attached by the
 * child only near the end (after the restart, when the checkpoint came first): its id, received
 * before the checkpoint, must lead to the restored segment. The two take turns, one line each.
 * MODE "outsider": a process outside the computation (exec'd without the runtime) attaches S3 too,
 * which a checkpoint must refuse. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <signal.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define S1_SIZE (4096 + 300)
#define S2_SIZE 8192
#define S3_SIZE (3 * 4096)

struct Turn {
  int whose; /* 0: the parent's, 1: the child's */
  long count;
};

static uint64_t sum(const void *p, size_t n) { return fnv1a(FNV_INIT, p, n); }

static void send_id(int fd, int id) { transfer_all(fd, &id, sizeof id, 1); }
static int receive_id(int fd) {
  int id;
  transfer_all(fd, &id, sizeof id, 0);
  return id;
}

static void *attach(int id, int flags) {
  void *p = shmat(id, NULL, flags);
  CHECK(p != (void *)-1);
  return p;
}

/* The outsider: attaches S3 and holds it while the program's first process lives (no pipe to
 * it: a pipe to a process outside the computation would be refused first). */
static int outsider_main(int id, int ack_fd, pid_t program) {
  attach(id, 0);
  char byte = 1;
  transfer_all(ack_fd, &byte, 1, 1);
  close(ack_fd);
  while (kill(program, 0) == 0) sleep_ms(50);
  return 0;
}

/* Starts the outsider as a grandchild exec'd with no LD_PRELOAD (the raw system call: the
 * runtime's execve would keep it in the computation), so no process of the computation is its
 * parent. Returns once it has S3 attached. */
static void start_outsider(int s3) {
  pid_t program = getpid();
  int ack[2];
  CHECK(pipe(ack) == 0);
  pid_t middle = fork();
  CHECK(middle >= 0);
  if (middle == 0) {
    if (fork() == 0) {
      char id[16], ack_fd[16], pid[16];
      snprintf(id, sizeof id, "%d", s3);
      snprintf(ack_fd, sizeof ack_fd, "%d", ack[1]);
      snprintf(pid, sizeof pid, "%d", (int)program);
      char *argv[] = {"sysv_shared", "outsider-process", id, ack_fd, pid, NULL};
      char *envp[] = {"PATH=/usr/bin:/bin", NULL};
      syscall(SYS_execve, "/proc/self/exe", argv, envp);
      _exit(127);
    }
    _exit(0);
  }
  CHECK(waitpid(middle, NULL, 0) == middle);
  char byte;
  transfer_all(ack[0], &byte, 1, 0);
  close(ack[0]);
  close(ack[1]);
}

/* The parent (other = the child's pid) stops when the child has ended instead of waiting forever. */
static void wait_for_turn(volatile struct Turn *turn, int me, pid_t other) {
  while (__atomic_load_n(&turn->whose, __ATOMIC_ACQUIRE) != me) {
    CHECK(other == 0 || waitpid(other, NULL, WNOHANG) == 0);
    sleep_ms(2);
  }
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "outsider-process") == 0)
    return outsider_main(atoi(argv[2]), atoi(argv[3]), (pid_t)atoi(argv[4]));
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  int outsider = argc > 3 && strcmp(argv[3], "outsider") == 0;
  long late_attach_step = steps > 10 ? steps - 5 : steps;

  int to_child[2], to_parent[2];
  CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  int me = child == 0 ? 1 : 0;
  int in = me ? to_child[0] : to_parent[0], out = me ? to_parent[1] : to_child[1];
  int s1, s2, s3;
  if (me == 0) {
    s1 = shmget(IPC_PRIVATE, S1_SIZE, 0600);
    s2 = shmget(IPC_PRIVATE, S2_SIZE, 0600);
    CHECK(s1 >= 0 && s2 >= 0);
    send_id(out, s1);
    send_id(out, s2);
    s3 = receive_id(in);
  } else {
    s3 = shmget(IPC_PRIVATE, S3_SIZE, 0600);
    CHECK(s3 >= 0);
    send_id(out, s3);
    s1 = receive_id(in);
    s2 = receive_id(in);
  }
  struct Turn *turn = attach(s1, 0);
  unsigned char *s1_bytes = (unsigned char *)turn + sizeof *turn;
  unsigned char *s3_bytes = attach(s3, 0);
  unsigned char *s2_bytes = me == 0 ? attach(s2, 0) : NULL;
  if (me == 0) CHECK(mprotect(s3_bytes + 4096, 4096, PROT_READ) == 0);
  send_id(out, 0); /* attached */
  receive_id(in);
  if (me == 0) {
    CHECK(shmctl(s1, IPC_RMID, NULL) == 0); /* both have it: gone once both detach */
    if (outsider) start_outsider(s3);
  }

  uint64_t seed = 11 + (uint64_t)me;
  for (long step = 1; step <= steps; step++) {
    wait_for_turn(turn, me, child);
    turn->count += me ? 3 : 1;
    for (int i = 0; i < 32; i++) {
      uint64_t v = splitmix64(&seed);
      s1_bytes[v % (S1_SIZE - sizeof *turn)] ^= (unsigned char)v;
      if (me == 1) s3_bytes[(v >> 16) % S3_SIZE] += (unsigned char)(v >> 8);
      else s2_bytes[(v >> 24) % S2_SIZE] = (unsigned char)(v >> 40);
    }
    printf("step %ld %s count %ld S1 %016llx S3 %016llx", step, me ? "child " : "parent", turn->count,
           (unsigned long long)sum(s1_bytes, S1_SIZE - sizeof *turn), (unsigned long long)sum(s3_bytes, S3_SIZE));
    if (me == 1 && step == late_attach_step) {
      /* An id this process never attached nor obtained through shmget. */
      unsigned char *late = attach(s2, SHM_RDONLY);
      printf(" S2 (attached now) %016llx", (unsigned long long)sum(late, S2_SIZE));
      CHECK(shmdt(late) == 0);
    }
    printf("\n");
    __atomic_store_n(&turn->whose, 1 - me, __ATOMIC_RELEASE);
    sleep_ms(delay);
  }
  wait_for_turn(turn, me, child); /* the other one's last step is done */
  __atomic_store_n(&turn->whose, 1 - me, __ATOMIC_RELEASE);
  CHECK(shmdt(turn) == 0 && shmdt(s3_bytes) == 0);
  if (me == 1) return 0;
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(shmdt(s2_bytes) == 0);
  struct shmid_ds ds;
  int s1_gone = shmctl(s1, IPC_STAT, &ds) != 0 && (errno == EINVAL || errno == EIDRM);
  CHECK(shmctl(s2, IPC_RMID, NULL) == 0 && shmctl(s3, IPC_RMID, NULL) == 0);
  printf("done: child exit %d, S1 %s after its last detach\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         s1_gone ? "removed" : "STILL THERE");
  return 0;
}
