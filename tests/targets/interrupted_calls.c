/* interrupted_calls: threads blocked in the calls the kernel never restarts after a signal
 * handler (poll, ppoll, select, pselect, epoll_wait, epoll_pwait, pause, sigsuspend,
 * sigtimedwait, sigwaitinfo, nanosleep, poll used as a sleep) while the main thread waits a
 * while and then wakes each of them (a byte on its pipe, or a signal sent to it). A checkpoint
 * or a restart that lands while they wait must stay invisible: any EINTR a waiter sees without a
 * signal of its own having been handled, and any timed wait that ends early, aborts the program
 * with a message. Each round prints one line.
 * usage: interrupted_calls [ROUNDS=30] [DELAY_MS=300] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

enum { POLL, PPOLL, SELECT, PSELECT, EPOLL_WAIT, EPOLL_PWAIT, PAUSE, SIGSUSPEND, SIGTIMEDWAIT,
       SIGWAITINFO, TIMED_SLEEPS, WAITERS };
static const char *const kNames[WAITERS] = {"poll", "ppoll", "select", "pselect", "epoll_wait",
                                            "epoll_pwait", "pause", "sigsuspend", "sigtimedwait",
                                            "sigwaitinfo", "timed"};
static int g_pipes[WAITERS][2];
static pthread_t g_threads[WAITERS];
static pthread_barrier_t g_start, g_done;
static long g_rounds, g_delay_ms;
static long g_results[WAITERS];
static volatile sig_atomic_t g_usr1_seen[WAITERS];
static __thread int t_index;

static void on_usr1(int sig) {
  (void)sig;
  g_usr1_seen[t_index] = 1;
}

static void fail(int index, const char *what) {
  printf("FAILED: %s: %s (errno %d)\n", kNames[index], what, errno);
  fflush(stdout);
  _exit(99);
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char take_byte(int index) {
  char c = 0;
  if (read(g_pipes[index][0], &c, 1) != 1) fail(index, "read");
  return c;
}

/* One wait of waiter `index`; returns what it got (the byte, or the signal). */
static long wait_once(int index) {
  int fd = g_pipes[index][0];
  struct pollfd pfd = {fd, POLLIN, 0};
  struct timespec long_wait = {60, 0};
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  switch (index) {
    case POLL:
      if (poll(&pfd, 1, 60000) != 1) fail(index, "did not return 1");
      return take_byte(index);
    case PPOLL:
      if (ppoll(&pfd, 1, &long_wait, NULL) != 1) fail(index, "did not return 1");
      return take_byte(index);
    case SELECT:
    case PSELECT: {
      fd_set in;
      FD_ZERO(&in);
      FD_SET(fd, &in);
      struct timeval tv = {60, 0};
      int r = index == SELECT ? select(fd + 1, &in, NULL, NULL, &tv)
                              : pselect(fd + 1, &in, NULL, NULL, &long_wait, NULL);
      if (r != 1 || !FD_ISSET(fd, &in)) fail(index, "did not return 1");
      return take_byte(index);
    }
    case EPOLL_WAIT:
    case EPOLL_PWAIT: {
      static int epfd[WAITERS];
      if (!epfd[index]) {
        epfd[index] = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
        if (epoll_ctl(epfd[index], EPOLL_CTL_ADD, fd, &ev) != 0) fail(index, "epoll_ctl");
      }
      struct epoll_event got;
      int r = index == EPOLL_WAIT ? epoll_wait(epfd[index], &got, 1, -1)
                                  : epoll_pwait(epfd[index], &got, 1, 60000, NULL);
      if (r != 1 || got.data.u32 != 7) fail(index, "did not return 1");
      return take_byte(index);
    }
    case PAUSE:
      /* Only a SIGUSR1 the main thread sends may end it. */
      while (!g_usr1_seen[index]) {
        if (pause() != -1 || errno != EINTR) fail(index, "returned without EINTR");
        if (!g_usr1_seen[index]) fail(index, "EINTR without a signal of the program");
      }
      g_usr1_seen[index] = 0;
      return SIGUSR1;
    case SIGSUSPEND: {
      sigset_t during;
      pthread_sigmask(SIG_SETMASK, NULL, &during);
      sigdelset(&during, SIGUSR1);
      if (sigsuspend(&during) != -1 || errno != EINTR) fail(index, "returned without EINTR");
      if (!g_usr1_seen[index]) fail(index, "EINTR without a signal of the program");
      g_usr1_seen[index] = 0;
      return SIGUSR1;
    }
    case SIGTIMEDWAIT: {
      siginfo_t info;
      int sig = sigtimedwait(&usr2, &info, &long_wait);
      if (sig != SIGUSR2) fail(index, "did not return SIGUSR2");
      return sig;
    }
    case SIGWAITINFO: {
      siginfo_t info;
      int sig = sigwaitinfo(&usr2, &info);
      if (sig != SIGUSR2) fail(index, "did not return SIGUSR2");
      return sig;
    }
    case TIMED_SLEEPS: {
      /* Sleeps the whole delay twice: poll without descriptors, then a bare nanosleep. Neither
       * may end early or with EINTR. */
      long started = now_ms();
      if (poll(NULL, 0, (int)g_delay_ms) != 0) fail(index, "poll sleep did not return 0");
      if (now_ms() - started < g_delay_ms) fail(index, "poll sleep ended early");
      started = now_ms();
      struct timespec req = {g_delay_ms / 1000, (g_delay_ms % 1000) * 1000000L};
      if (nanosleep(&req, NULL) != 0) fail(index, "nanosleep did not return 0");
      if (now_ms() - started < g_delay_ms) fail(index, "nanosleep ended early");
      return 2;
    }
  }
  return -1;
}

static void *waiter(void *arg) {
  t_index = (int)(long)arg;
  if (t_index == PAUSE) { /* pause() cannot unblock it atomically: open to SIGUSR1 throughout */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  }
  for (long round = 0; round < g_rounds; round++) {
    pthread_barrier_wait(&g_start);
    g_results[t_index] = wait_once(t_index);
    pthread_barrier_wait(&g_done);
  }
  return NULL;
}

/* The pause thread takes SIGUSR1 at any time: wake it only once it is inside pause(). Found by
 * its system call rather than its tid, which /proc no longer knows after a restart. */
static int some_thread_in_pause(void) {
  DIR *tasks = opendir("/proc/self/task");
  CHECK(tasks != NULL);
  int found = 0;
  for (struct dirent *d; !found && (d = readdir(tasks)) != NULL;) {
    if (d->d_name[0] == '.') continue;
    char path[300], text[64];
    snprintf(path, sizeof path, "/proc/self/task/%s/syscall", d->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* a thread that just ended */
    found = fgets(text, sizeof text, f) != NULL && atoi(text) == 34 /* SYS_pause */;
    fclose(f);
  }
  closedir(tasks);
  return found;
}

static void wait_until_in_pause(void) {
  while (!some_thread_in_pause()) sleep_ms(5);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  g_rounds = arg_long(argc, argv, 1, 30);
  g_delay_ms = arg_long(argc, argv, 2, 300);
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* the kernel still interrupts every call above */
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigaddset(&blocked, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &blocked, NULL); /* inherited by every waiter */
  pthread_barrier_init(&g_start, NULL, WAITERS + 1);
  pthread_barrier_init(&g_done, NULL, WAITERS + 1);
  for (int i = 0; i < WAITERS; i++) {
    CHECK(pipe(g_pipes[i]) == 0);
    CHECK(pthread_create(&g_threads[i], NULL, waiter, (void *)(long)i) == 0);
  }
  for (long round = 0; round < g_rounds; round++) {
    pthread_barrier_wait(&g_start);
    sleep_ms(g_delay_ms); /* the checkpoint most likely lands here, with every waiter blocked */
    for (int i = POLL; i <= EPOLL_PWAIT; i++) {
      char c = (char)('a' + (round + i) % 26);
      CHECK(write(g_pipes[i][1], &c, 1) == 1);
    }
    pthread_kill(g_threads[SIGTIMEDWAIT], SIGUSR2);
    pthread_kill(g_threads[SIGWAITINFO], SIGUSR2);
    pthread_kill(g_threads[SIGSUSPEND], SIGUSR1);
    wait_until_in_pause();
    pthread_kill(g_threads[PAUSE], SIGUSR1);
    pthread_barrier_wait(&g_done);
    printf("step %ld:", round);
    for (int i = 0; i < WAITERS; i++) printf(" %s=%ld", kNames[i], g_results[i]);
    printf("\n");
  }
  for (int i = 0; i < WAITERS; i++) pthread_join(g_threads[i], NULL);
  printf("done\n");
  return 0;
}
