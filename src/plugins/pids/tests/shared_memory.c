/* shared_memory: a parent and two children that take turns through memory they share, of the
 * three kinds no path leads to: shared anonymous memory (inherited across fork), a POSIX
 * semaphore made by sem_open and unlinked at once (python's multiprocessing does this), and a
 * memfd mapped shared whose descriptor is closed. After a restart every process must still see
 * the others' writes: each turn is handed on with a semaphore in shared memory, so a restart
 * that gives each process its own copy hangs or prints other numbers.
 * usage: shared_memory [STEPS=60] [DELAY_MS=40]
 * The memfd region is mapped twice in the parent (two views of one object); the parent checks
 * that a write through one view shows through the other. */
#include "target_common.h"

#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct Shared {
  sem_t turn[3];     /* process i waits on turn[i]; hands on to turn[(i+1)%3] */
  uint64_t total;    /* every process adds to it on its turn */
  uint64_t history[3];
};

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 40);

  struct Shared *shared = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  for (int i = 0; i < 3; i++) CHECK(sem_init(&shared->turn[i], 1, i == 0) == 0);

  char name[64];
  snprintf(name, sizeof name, "/stasis-test-shm-%d", (int)getpid());
  sem_t *done = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
  CHECK(done != SEM_FAILED);
  CHECK(sem_unlink(name) == 0);

  int memfd = memfd_create("stasis-test-ledger", 0);
  CHECK(memfd >= 0 && ftruncate(memfd, 2 * 4096) == 0);
  uint64_t *ledger = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  uint64_t *second_view = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 4096);
  CHECK(ledger != MAP_FAILED && second_view != MAP_FAILED);
  close(memfd);

  pid_t children[2];
  for (int c = 0; c < 2; c++) {
    children[c] = fork();
    CHECK(children[c] >= 0);
    if (children[c] == 0) {
      int me = c + 1;
      for (long step = 1; step <= steps; step++) {
        while (sem_wait(&shared->turn[me]) != 0) CHECK(errno == EINTR);
        shared->total = shared->total * 31 + (uint64_t)(me * 1000 + step);
        shared->history[me] = shared->total;
        ledger[step % 512] += (uint64_t)me;
        CHECK(sem_post(&shared->turn[(me + 1) % 3]) == 0);
      }
      CHECK(sem_post(done) == 0);
      _exit(0);
    }
  }
  for (long step = 1; step <= steps; step++) {
    while (sem_wait(&shared->turn[0]) != 0) CHECK(errno == EINTR);
    shared->total = shared->total * 31 + (uint64_t)step;
    ledger[512 + step % 512] = shared->total;  /* the second page: seen through second_view */
    CHECK(second_view[step % 512] == shared->total);
    printf("step %ld total %llu child1 %llu child2 %llu\n", step, (unsigned long long)shared->total,
           (unsigned long long)shared->history[1], (unsigned long long)shared->history[2]);
    CHECK(sem_post(&shared->turn[1]) == 0);
    sleep_ms(delay);
  }
  for (int c = 0; c < 2; c++) while (sem_wait(done) != 0) CHECK(errno == EINTR);
  uint64_t sum = FNV_INIT;
  sum = fnv1a(sum, ledger, 4096);
  for (int c = 0; c < 2; c++) {
    int status = 0;
    CHECK(waitpid(children[c], &status, 0) == children[c]);
    printf("child %d exit %d\n", c + 1, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  printf("ledger %llu total %llu\n", (unsigned long long)sum, (unsigned long long)shared->total);
  return 0;
}
