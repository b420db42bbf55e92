/* signalfd_ops: signalfds keep their signal masks and flags across a checkpoint.
 * usage: signalfd_ops [STEPS=60] [DELAY_MS=50]
 * SIGUSR1, SIGUSR2 and SIGRTMIN+3 are blocked. `usr` (nonblocking) takes SIGUSR1 and SIGRTMIN+3,
 * `other` (blocking) takes SIGUSR2. Each step queues signals with a value (pthread_sigqueue) in
 * a fixed pattern, then reads what `usr` and `other` deliver; SIGRTMIN+3 is sent one step before
 * it is read, so it is pending while the program sleeps. Every signal sent after the restart
 * must arrive at the right signalfd with its value; a wrong mask shows as a signal read by the
 * wrong descriptor or not at all (reads are nonblocking or guarded by poll). */
#include "target_common.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void send(int sig, int value) {
  union sigval v = {.sival_int = value};
  CHECK(pthread_sigqueue(pthread_self(), sig, v) == 0); /* thread-directed: no pid involved */
}

/* Reads every signal `fd` has now; prints "signo:value". */
static void read_all(const char *name, int fd) {
  printf(" %s[", name);
  const char *sep = "";
  struct pollfd p = {fd, POLLIN, 0};
  while (poll(&p, 1, 0) == 1) {
    struct signalfd_siginfo info;
    CHECK(read(fd, &info, sizeof info) == sizeof info);
    int sig = (int)info.ssi_signo;
    printf("%s%s:%d", sep, sig == SIGUSR1 ? "USR1" : sig == SIGUSR2 ? "USR2" : sig == SIGRTMIN + 3 ? "RT3" : "?",
           info.ssi_int);
    sep = " ";
  }
  printf("]");
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  sigset_t blocked, usr_mask, other_mask;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigaddset(&blocked, SIGUSR2);
  sigaddset(&blocked, SIGRTMIN + 3);
  CHECK(sigprocmask(SIG_BLOCK, &blocked, NULL) == 0);
  sigemptyset(&usr_mask);
  sigaddset(&usr_mask, SIGUSR1);
  sigaddset(&usr_mask, SIGRTMIN + 3);
  sigemptyset(&other_mask);
  sigaddset(&other_mask, SIGUSR2);
  int usr = signalfd(-1, &usr_mask, SFD_NONBLOCK);
  int other = signalfd(-1, &other_mask, 0);
  CHECK(usr >= 0 && other >= 0);
  for (long step = 1; step <= steps; step++) {
    if (step % 2 == 1) send(SIGUSR1, (int)step);
    if (step % 3 == 0) send(SIGUSR2, (int)step * 10);
    printf("step %ld", step);
    read_all("usr", usr);
    read_all("other", other);
    struct signalfd_siginfo info;
    printf(" nonblock %d/%d empty %s\n", !!(fcntl(usr, F_GETFL) & O_NONBLOCK),
           !!(fcntl(other, F_GETFL) & O_NONBLOCK),
           read(usr, &info, sizeof info) < 0 && errno == EAGAIN ? "EAGAIN" : "WRONG");
    /* Queued now, read at the next step: pending across a checkpoint in the sleep below. */
    if (step % 4 == 1) send(SIGRTMIN + 3, (int)step * 100);
    sleep_ms(delay);
  }
  printf("done");
  read_all("usr", usr);
  read_all("other", other);
  printf("\n");
  return 0;
}
