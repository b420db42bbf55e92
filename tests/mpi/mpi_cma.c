/* mpi_cma: cross-memory attach the way MPI shared-memory transports use it (Open MPI's vader, UCX's
 * cma): a process copies a message straight out of another process's memory with
 * process_vm_readv, and writes its answer back with process_vm_writev, naming that process by the
 * pid it learnt before (after a restart, a virtual pid).
 * usage: mpi_cma [STEPS=60] [DELAY_MS=50]
 * The parent fills a message buffer each step and hands the step number to the child over a pipe;
 * the child reads the buffer from the parent's memory, checksums it, writes the checksum into the
 * parent's answer slot and acknowledges; the parent prints "step N sum S". */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/uio.h>
#include <sys/wait.h>

enum { kWords = 8192 };
static uint64_t g_message[kWords];
static uint64_t g_answer;

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int to_child[2], to_parent[2];
  CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
  pid_t parent = getpid();
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    static uint64_t copy[kWords];
    long step;
    while (read(to_child[0], &step, sizeof step) == (ssize_t)sizeof step) {
      struct iovec local = {copy, sizeof copy}, remote = {g_message, sizeof g_message};
      CHECK(process_vm_readv(parent, &local, 1, &remote, 1, 0) == (ssize_t)sizeof copy);
      uint64_t sum = fnv1a(FNV_INIT, copy, sizeof copy) ^ (uint64_t)step;
      struct iovec answer_local = {&sum, sizeof sum}, answer_remote = {&g_answer, sizeof g_answer};
      CHECK(process_vm_writev(parent, &answer_local, 1, &answer_remote, 1, 0) == (ssize_t)sizeof sum);
      transfer_all(to_parent[1], &step, sizeof step, 1);
    }
    _exit(0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  uint64_t seed = 7;
  for (long step = 1; step <= steps; step++) {
    for (int i = 0; i < kWords; i++) g_message[i] = splitmix64(&seed);
    g_answer = 0;
    transfer_all(to_child[1], &step, sizeof step, 1);
    long acknowledged = 0;
    transfer_all(to_parent[0], &acknowledged, sizeof acknowledged, 0);
    CHECK(acknowledged == step);
    printf("step %ld sum %016llx\n", step, (unsigned long long)g_answer);
    sleep_ms(delay);
  }
  close(to_child[1]);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("done\n");
  return 0;
}
