/* sysv_sem: System V semaphore sets across a checkpoint.
 * usage: sysv_sem [STEPS=40] [DELAY_MS=50] [KEY=0x5157a002] [UNDO=0]
 * A keyed set of 3 semaphores and a private set of 2 change at every step (semop, SETVAL); each
 * step prints every value and what IPC_STAT says. UNDO=1 makes one semop with SEM_UNDO, whose
 * adjustment a checkpoint cannot save (the checkpoint must be refused). */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/sem.h>

union semun {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  key_t key = (key_t)arg_long(argc, argv, 3, 0x5157a002);
  int undo = (int)arg_long(argc, argv, 4, 0);

  int keyed = semget(key, 3, IPC_CREAT | IPC_EXCL | 0660);
  int priv = semget(IPC_PRIVATE, 2, 0600);
  CHECK(keyed >= 0 && priv >= 0);
  unsigned short start[3] = {5, 100, 0};
  CHECK(semctl(keyed, 0, SETALL, (union semun){.array = start}) == 0);
  if (undo) {
    struct sembuf op = {2, 1, SEM_UNDO};
    CHECK(semop(keyed, &op, 1) == 0);
  }
  for (long step = 1; step <= steps; step++) {
    struct sembuf ops[2] = {{0, (short)(1 + step % 5), 0}, {1, -1, IPC_NOWAIT}};
    CHECK(semop(keyed, ops, 2) == 0);
    struct sembuf p = {(unsigned short)(step % 2), 2, 0};
    CHECK(semop(priv, &p, 1) == 0);
    if (step % 7 == 0) CHECK(semctl(priv, 1, SETVAL, (union semun){.val = (int)step}) == 0);
    unsigned short v[3];
    CHECK(semctl(keyed, 0, GETALL, (union semun){.array = v}) == 0);
    struct semid_ds ds;
    CHECK(semctl(keyed, 0, IPC_STAT, (union semun){.buf = &ds}) == 0);
    CHECK(semget(key, 0, 0) == keyed);
    printf("step %ld keyed %u %u %u (nsems %lu mode %o) private %d %d\n", step, v[0], v[1], v[2],
           (unsigned long)ds.sem_nsems, ds.sem_perm.mode & 0777, semctl(priv, 0, GETVAL),
           semctl(priv, 1, GETVAL));
    sleep_ms(delay);
  }
  CHECK(semctl(keyed, 0, IPC_RMID) == 0 && semctl(priv, 0, IPC_RMID) == 0);
  printf("done\n");
  return 0;
}
