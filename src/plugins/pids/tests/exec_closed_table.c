/* exec_closed_table: each step forks a child that closes descriptor 1020 (the pid table's, after a
 * restart) with a raw system call, past the runtime's close wrappers, then execs this program
 * again; the new program checks that its parent is the pid the parent knows itself by, lives a
 * while (so checkpoints find it running) and exits. After a restart the new program finds the
 * table only at descriptor 1020, which the exec wrapper puts back: without it the program would
 * see its parent's kernel pid and join the old coordinator.
 * usage: exec_closed_table [STEPS=30] [DELAY_MS=100] | exec_closed_table child PARENT DELAY_MS */
#include "target_common.h"

#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long raw_close(long fd) {
  long result;
  __asm__ volatile("syscall" : "=a"(result) : "0"((long)SYS_close), "D"(fd) : "rcx", "r11", "memory");
  return result;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc == 4 && strcmp(argv[1], "child") == 0) {
    sleep_ms(atol(argv[3]));
    return getppid() == (pid_t)atol(argv[2]) ? 0 : 3;
  }
  long steps = arg_long(argc, argv, 1, 30), delay = arg_long(argc, argv, 2, 100);
  char parent[24], delay_text[24];
  for (long step = 1; step <= steps; step++) {
    snprintf(parent, sizeof parent, "%ld", (long)getpid());
    snprintf(delay_text, sizeof delay_text, "%ld", delay);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      raw_close(1020);
      execl(argv[0], argv[0], "child", parent, delay_text, (char *)NULL);  /* the driver gives a path */
      _exit(90);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    printf("step %ld child status %d\n", step, WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  printf("done\n");
  return 0;
}
