/* vpid_signals: pids inside signals and descriptor owners stay the ones the program saw before a
 * restart.
 * usage: vpid_signals [STEPS=50] [DELAY_MS=50]
 * A parent and a long-lived child (commands over a pipe, answers over another). Each step checks,
 * one letter each (y = right pid):
 *   u  the child's kill(SIGUSR1) reaches the parent's SA_SIGINFO handler with si_pid = the child
 *   q  sigqueue(child) arrives in the child's handler with si_pid = its parent and the value
 *   p  pidfd_open(child) + pidfd_send_signal arrive there with si_pid = its parent
 *   t  tgkill(getpid(), gettid()) arrives with si_pid = getpid()
 *   f  a signalfd read of the child's signal gives ssi_pid = the child
 *   c  a short child's SIGCHLD handler sees its pid, waitid's si_pid too, fork's result = its getpid
 *   o  fcntl F_SETOWN/F_GETOWN (process and group) and F_SETOWN_EX/F_GETOWN_EX give back the pid */
#include "target_common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_count, usr1_pid, chld_count, chld_pid;
static volatile sig_atomic_t usr2_count, usr2_pid, usr2_value;

static void on_usr1(int sig, siginfo_t *info, void *ctx) {
  (void)sig, (void)ctx;
  usr1_pid = info->si_pid;
  usr1_count++;
}
static void on_chld(int sig, siginfo_t *info, void *ctx) {
  (void)sig, (void)ctx;
  chld_pid = info->si_pid;
  chld_count++;
}
static void on_usr2(int sig, siginfo_t *info, void *ctx) {
  (void)sig, (void)ctx;
  usr2_pid = info->si_pid;
  usr2_value = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
  usr2_count++;
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* Waits (boundedly) until a signal counter moves past `before`. */
static int moved(volatile sig_atomic_t *counter, sig_atomic_t before) {
  for (int i = 0; i < 10000 && *counter == before; i++) sleep_ms(1);
  return *counter != before;
}

static void put(int fd, const void *p, size_t n) { CHECK(write(fd, p, n) == (ssize_t)n); }
static void get(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    CHECK(r > 0);
    got += (size_t)r;
  }
}

#define SIGFD_SIGNAL (SIGRTMIN + 1)

/* The long-lived child: 'k' kill the parent with SIGUSR1, 's' send it SIGFD_SIGNAL, 'w' VALUE
 * report whether the next SIGUSR2 came from the parent (with VALUE when VALUE >= 0). */
static void child_loop(int in, int out, pid_t parent) {
  sig_atomic_t consumed = 0;
  char cmd;
  while (read(in, &cmd, 1) == 1) {
    if (cmd == 'k') CHECK(kill(getppid(), SIGUSR1) == 0);
    if (cmd == 's') CHECK(kill(getppid(), SIGFD_SIGNAL) == 0);
    if (cmd == 'w') {  /* exactly one SIGUSR2 is on its way */
      int value;
      get(in, &value, sizeof value);
      char ok = moved(&usr2_count, consumed) && usr2_pid == parent && getppid() == parent &&
                (value < 0 || usr2_value == value) ? 'y' : 'n';
      consumed = usr2_count;
      put(out, &ok, 1);
    }
  }
  _exit(0);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 50);
  long delay = arg_long(argc, argv, 2, 50);
  handle(SIGUSR1, on_usr1);
  handle(SIGUSR2, on_usr2);
  handle(SIGCHLD, on_chld);
  sigset_t fd_set;
  sigemptyset(&fd_set);
  sigaddset(&fd_set, SIGFD_SIGNAL);
  CHECK(sigprocmask(SIG_BLOCK, &fd_set, NULL) == 0);
  int sfd = signalfd(-1, &fd_set, SFD_CLOEXEC);
  CHECK(sfd >= 0);
  pid_t self = getpid();
  int to_child[2], from_child[2];
  CHECK(pipe(to_child) == 0 && pipe(from_child) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    close(to_child[1]);
    close(from_child[0]);
    child_loop(to_child[0], from_child[1], self);
  }
  close(to_child[0]);
  close(from_child[1]);
  int owned = from_child[0];

  for (long step = 1; step <= steps; step++) {
    char r[8];
    /* u */
    sig_atomic_t before = usr1_count;
    put(to_child[1], "k", 1);
    r[0] = moved(&usr1_count, before) && usr1_pid == child ? 'y' : 'n';
    /* q */
    int value = (int)step;
    put(to_child[1], "w", 1);
    put(to_child[1], &value, sizeof value);
    union sigval sv = {.sival_int = value};
    CHECK(sigqueue(child, SIGUSR2, sv) == 0);
    get(from_child[0], &r[1], 1);
    /* p */
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    value = -1;
    put(to_child[1], "w", 1);
    put(to_child[1], &value, sizeof value);
    r[2] = pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, SIGUSR2, NULL, 0) == 0 ? 'y' : 'n';
    char ok;
    get(from_child[0], &ok, 1);
    if (ok != 'y') r[2] = 'n';
    if (pidfd >= 0) close(pidfd);
    /* t */
    before = usr1_count;
    CHECK(tgkill(getpid(), gettid(), SIGUSR1) == 0);
    r[3] = moved(&usr1_count, before) && usr1_pid == self ? 'y' : 'n';
    /* f */
    put(to_child[1], "s", 1);
    struct signalfd_siginfo ssi;
    r[4] = read(sfd, &ssi, sizeof ssi) == (ssize_t)sizeof ssi && (int)ssi.ssi_signo == SIGFD_SIGNAL &&
                   (pid_t)ssi.ssi_pid == child ? 'y' : 'n';
    /* c */
    int link[2];
    CHECK(pipe(link) == 0);
    before = chld_count;
    pid_t brief = fork();
    CHECK(brief >= 0);
    if (brief == 0) {
      pid_t me = getpid();
      put(link[1], &me, sizeof me);
      _exit((int)(step % 7));
    }
    close(link[1]);
    pid_t reported = 0;
    get(link[0], &reported, sizeof reported);
    close(link[0]);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    CHECK(waitid(P_PID, (id_t)brief, &info, WEXITED) == 0);
    r[5] = reported == brief && info.si_pid == brief && info.si_status == step % 7 &&
                   moved(&chld_count, before) && chld_pid == brief ? 'y' : 'n';
    /* o */
    struct f_owner_ex owner = {F_OWNER_PID, child}, seen = {0, 0};
    r[6] = fcntl(owned, F_SETOWN, child) == 0 && fcntl(owned, F_GETOWN) == child &&
                   fcntl(owned, F_SETOWN, -getpgrp()) == 0 && fcntl(owned, F_GETOWN) == -getpgrp() &&
                   fcntl(owned, F_SETOWN_EX, &owner) == 0 && fcntl(owned, F_GETOWN_EX, &seen) == 0 &&
                   seen.type == F_OWNER_PID && seen.pid == child ? 'y' : 'n';
    CHECK(fcntl(owned, F_SETOWN, 0) == 0);
    r[7] = 0;
    printf("step %ld uqptfco %s\n", step, r);
    sleep_ms(delay);
  }
  close(to_child[1]);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
