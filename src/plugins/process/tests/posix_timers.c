/* posix_timers: POSIX timers (timer_create) that must survive a checkpoint with their ids.
 *   - P: CLOCK_MONOTONIC, SIGEV_SIGNAL SIGRTMIN+2 (value 101), every 100 ms, counted by a handler;
 *   - T: CLOCK_BOOTTIME, SIGEV_THREAD_ID to a worker thread, SIGRTMIN+3 (value 303), every 150 ms,
 *     taken with sigwaitinfo by that worker only (every thread blocks it, so a signal sent to
 *     another thread would stay pending there);
 *   - N: CLOCK_MONOTONIC, SIGEV_NONE, one-shot in one hour: its remaining time must only go down;
 *   - D: CLOCK_REALTIME with the default notification (timer_create(..., NULL, ...): SIGALRM with
 *     the timer id as value), never armed; deleted at the end, which fails if its id was lost.
 * Every 10 steps P and T must have fired since the previous check. Each delivery checks si_code
 * (SI_TIMER), the value and the timer id. Near the end a new timer is created: its id must be the
 * one an uninterrupted run gets.
 * usage: posix_timers [STEPS=60] [DELAY_MS=50] [SIGEV_THREAD=0]
 *   SIGEV_THREAD=1 adds a timer that runs a function in a thread (checkpoints refuse it). */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static timer_t g_p, g_t, g_n, g_d;
static volatile sig_atomic_t p_count, p_bad;
static atomic_int t_count, t_bad, t_ready, thread_timer_calls;

static void arm(timer_t timer, long first_ms, long every_ms) {
  struct itimerspec its = {{every_ms / 1000, (every_ms % 1000) * 1000000L},
                           {first_ms / 1000, (first_ms % 1000) * 1000000L}};
  CHECK(timer_settime(timer, 0, &its, NULL) == 0);
}

static void on_p(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  if (si->si_code != SI_TIMER || si->si_value.sival_int != 101 || si->si_timerid != (int)(intptr_t)g_p)
    p_bad = 1;
  p_count++;
}

static void *worker(void *arg) {
  (void)arg;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGRTMIN + 3;
  sev.sigev_value.sival_int = 303;
  sev._sigev_un._tid = gettid();
  CHECK(timer_create(CLOCK_BOOTTIME, &sev, &g_t) == 0);
  arm(g_t, 150, 150);
  atomic_store(&t_ready, 1);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGRTMIN + 3);
  for (;;) {
    siginfo_t si;
    if (sigwaitinfo(&set, &si) < 0) continue; /* EINTR */
    if (si.si_code != SI_TIMER || si.si_value.sival_int != 303 || si.si_timerid != (int)(intptr_t)g_t)
      atomic_store(&t_bad, 1);
    atomic_fetch_add(&t_count, 1);
  }
  return NULL;
}

static void on_thread_timer(union sigval v) {
  (void)v;
  atomic_fetch_add(&thread_timer_calls, 1);
}

static long remaining_ms(timer_t timer) {
  struct itimerspec its;
  if (timer_gettime(timer, &its) != 0) return -1;
  return its.it_value.tv_sec * 1000 + its.it_value.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int sigev_thread = (int)arg_long(argc, argv, 3, 0);
  CHECK(steps >= 20);

  sigset_t worker_signal;
  sigemptyset(&worker_signal);
  sigaddset(&worker_signal, SIGRTMIN + 3);
  CHECK(pthread_sigmask(SIG_BLOCK, &worker_signal, NULL) == 0); /* inherited by the worker */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_p;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGRTMIN + 2, &sa, NULL) == 0);
  signal(SIGALRM, SIG_IGN);

  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = SIGRTMIN + 2;
  sev.sigev_value.sival_int = 101;
  CHECK(timer_create(CLOCK_MONOTONIC, &sev, &g_p) == 0);
  arm(g_p, 100, 100);

  pthread_t worker_thread;
  CHECK(pthread_create(&worker_thread, NULL, worker, NULL) == 0);
  while (!atomic_load(&t_ready)) sleep_ms(1);

  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_NONE;
  CHECK(timer_create(CLOCK_MONOTONIC, &sev, &g_n) == 0);
  arm(g_n, 3600 * 1000L, 0);
  CHECK(timer_create(CLOCK_REALTIME, NULL, &g_d) == 0);

  if (sigev_thread) {
    timer_t thread_timer;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = on_thread_timer;
    CHECK(timer_create(CLOCK_MONOTONIC, &sev, &thread_timer) == 0);
    arm(thread_timer, 100, 100);
  }
  printf("timer ids P %d T %d N %d D %d\n", (int)(intptr_t)g_p, (int)(intptr_t)g_t,
         (int)(intptr_t)g_n, (int)(intptr_t)g_d);

  int p_seen = 0, t_seen = 0, p_ok = 1, t_ok = 1, none_ok = 1;
  long none_left = remaining_ms(g_n);
  for (long step = 1; step <= steps; step++) {
    if (step % 10 == 0) {
      p_ok = p_count > p_seen;
      t_ok = atomic_load(&t_count) > t_seen;
      p_seen = p_count;
      t_seen = atomic_load(&t_count);
    }
    long left = remaining_ms(g_n);
    if (left <= 0 || left > none_left) none_ok = 0;
    none_left = left;
    if (step == steps - 5) {
      timer_t late;
      CHECK(timer_create(CLOCK_MONOTONIC, NULL, &late) == 0);
      printf("new timer id %d\n", (int)(intptr_t)late);
    }
    printf("step %ld periodic %d thread %d none %d bad %d%d\n", step, p_ok, t_ok, none_ok,
           (int)p_bad, atomic_load(&t_bad));
    sleep_ms(delay);
  }
  printf("delete D %d N %d P %d\n", timer_delete(g_d), timer_delete(g_n), timer_delete(g_p));
  return 0;
}
