/* ssh_driver: a program that starts workers on another host with ssh and reads their output
 * through ssh's standard output, as a user's driver script does.
 * usage: ssh_driver CLIENTS [SSH_OPTION...] -- HOST COMMAND...
 * Runs CLIENTS copies of `ssh SSH_OPTION... HOST COMMAND...` at once (ssh found through PATH),
 * each with its standard output a pipe to this program, and prints every line read from client
 * K as "K: LINE", then, once each client's output ends, "K: ssh exit STATUS" (the status ssh
 * exited with, from waitpid), then "driver done". */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <poll.h>
#include <sys/wait.h>

#define MAX_CLIENTS 16

int main(int argc, char **argv) {
  line_buffered_stdout();
  int clients = argc > 1 ? atoi(argv[1]) : 0;
  int separator = 2;
  while (separator < argc && strcmp(argv[separator], "--") != 0) separator++;
  if (clients < 1 || clients > MAX_CLIENTS || separator + 2 >= argc) {
    fprintf(stderr, "usage: ssh_driver CLIENTS [SSH_OPTION...] -- HOST COMMAND...\n");
    return 2;
  }
  char **ssh_argv = calloc((size_t)argc + 1, sizeof(char *));
  CHECK(ssh_argv != NULL);
  int n = 0;
  ssh_argv[n++] = "ssh";
  for (int i = 2; i < separator; i++) ssh_argv[n++] = argv[i];
  for (int i = separator + 1; i < argc; i++) ssh_argv[n++] = argv[i];

  pid_t pids[MAX_CLIENTS];
  static char pending[MAX_CLIENTS][8192]; /* the part of a line read so far */
  size_t pending_len[MAX_CLIENTS] = {0};
  struct pollfd fds[MAX_CLIENTS];
  for (int k = 0; k < clients; k++) {
    int out[2];
    CHECK(pipe(out) == 0);
    pids[k] = fork();
    CHECK(pids[k] >= 0);
    if (pids[k] == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      execvp("ssh", ssh_argv);
      perror("ssh_driver: exec ssh");
      _exit(127);
    }
    close(out[1]);
    fds[k].fd = out[0];
    fds[k].events = POLLIN;
  }
  int open_outputs = clients;
  while (open_outputs > 0) {
    if (poll(fds, (nfds_t)clients, -1) < 0) {
      CHECK(errno == EINTR);
      continue;
    }
    for (int k = 0; k < clients; k++) {
      if (fds[k].fd < 0 || !fds[k].revents) continue;
      ssize_t got = read(fds[k].fd, pending[k] + pending_len[k], sizeof pending[k] - pending_len[k]);
      if (got < 0 && errno == EINTR) continue;
      CHECK(got >= 0);
      if (got > 0) {
        pending_len[k] += (size_t)got;
        char *start = pending[k], *end;
        while ((end = memchr(start, '\n', pending_len[k] - (size_t)(start - pending[k]))) != NULL) {
          printf("%d: %.*s\n", k + 1, (int)(end - start), start);
          start = end + 1;
        }
        pending_len[k] -= (size_t)(start - pending[k]);
        memmove(pending[k], start, pending_len[k]);
        CHECK(pending_len[k] < sizeof pending[k]);
        continue;
      }
      if (pending_len[k]) printf("%d: %.*s (no newline)\n", k + 1, (int)pending_len[k], pending[k]);
      close(fds[k].fd);
      fds[k].fd = -1;
      open_outputs--;
      int status = 0;
      while (waitpid(pids[k], &status, 0) < 0) CHECK(errno == EINTR);
      printf("%d: ssh exit %d\n", k + 1, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  }
  printf("driver done\n");
  return 0;
}
