/* close_all_fds: a program that closes every descriptor above stderr, as daemons and MPI
 * launchers do before they exec (a loop up to the descriptor limit, then closefrom), in itself and
 * in a child it forks; both then count steps. Under Stasis the runtime's own descriptors (its
 * coordinator connection, its pid table) must survive, or the checkpoint fails.
 * usage: close_all_fds [STEPS=40] [DELAY_MS=50] */
#include "target_common.h"

#include <sys/wait.h>

static void close_everything(void) {
  long limit = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < limit && fd < 65536; fd++) close((int)fd);
  closefrom(3);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40), delay = arg_long(argc, argv, 2, 50);
  close_everything();
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    close_everything();
    for (long i = 1; i <= steps; i++) sleep_ms(delay);
    _exit(7);
  }
  for (long i = 1; i <= steps; i++) {
    printf("step %ld\n", i);
    sleep_ms(delay);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  printf("done child status %d\n", WEXITSTATUS(status));
  return 0;
}
