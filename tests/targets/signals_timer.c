/* signals_timer: signal state that must survive a checkpoint.
 *   - SIGUSR1: SA_SIGINFO|SA_ONSTACK|SA_RESTART handler, sa_mask {SIGUSR2}; queued to this thread
 *     every step with pthread_sigqueue (value = step). The handler checks it runs on the
 *     alternate stack and with SIGUSR2 blocked.
 *   - SIGUSR2 blocked at step 3, raised (pending, thread-directed), released at step 30.
 *   - SIGRTMIN blocked at step 3, queued three times (values 1,2,3), released at step 32: the
 *     three values must arrive in order.
 *   - SIGWINCH blocked at step 3, sent process-wide with kill(), released at step 31; its count is
 *     printed at every step, so a delivery to some other thread shows up as a difference.
 *   - ITIMER_REAL one-shot of 2 s armed at step 2, waited for (sigsuspend) at step 44, then alarm(1)
 *     armed at step 45 and waited for at step 60: both timers are pending across a checkpoint
 *     taken in between.
 *   - SIGHUP ignored; every step checks all dispositions, flags and masks are unchanged.
 *   - optional (POSIX_TIMER=1): a timer_create(CLOCK_MONOTONIC) timer with SIGRTMIN+1, 1.5 s,
 *     armed at step 5 and waited for at step 50.
 * usage: signals_timer [STEPS=60] [DELAY_MS=50] [POSIX_TIMER=0]   (STEPS must be >= 60) */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

static char *g_alt;
static size_t g_alt_size = 1 << 16;
static volatile sig_atomic_t usr1_count, usr1_code, usr1_value, usr1_on_alt = 1, usr1_masked = 1;
static volatile sig_atomic_t usr2_count, usr2_code, winch_count, winch_code;
static volatile sig_atomic_t alrm_count, ptimer_count, ptimer_value;
static volatile sig_atomic_t rt_count, rt_values[8];

static void on_usr1(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  char local;
  usr1_count++;
  usr1_code = si->si_code;
  usr1_value = si->si_value.sival_int;
  if (!(&local >= g_alt && &local < g_alt + g_alt_size)) usr1_on_alt = 0;
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  if (!sigismember(&cur, SIGUSR2)) usr1_masked = 0;
}
static void on_usr2(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  usr2_count++;
  usr2_code = si->si_code;
}
static void on_winch(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  winch_count++;
  winch_code = si->si_code;
}
static void on_alrm(int sig) {
  (void)sig;
  alrm_count++;
}
static void on_rt(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  if (rt_count < 8) rt_values[rt_count] = si->si_value.sival_int;
  rt_count++;
}
static void on_ptimer(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  ptimer_count++;
  ptimer_value = si->si_value.sival_int;
}

struct expected_disp {
  int sig;
  void *handler;
  int flags;
  int masks_usr2;
};
static struct expected_disp g_disp[8];
static int g_ndisp;

static void install(int sig, void *handler, int flags, int mask_usr2) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  if (mask_usr2) sigaddset(&sa.sa_mask, SIGUSR2);
  sa.sa_flags = flags;
  if (flags & SA_SIGINFO)
    sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))handler;
  else
    sa.sa_handler = (void (*)(int))handler;
  CHECK(sigaction(sig, &sa, NULL) == 0);
  g_disp[g_ndisp++] = (struct expected_disp){sig, handler, flags, mask_usr2};
}

static int dispositions_ok(void) {
  for (int i = 0; i < g_ndisp; i++) {
    struct sigaction cur;
    CHECK(sigaction(g_disp[i].sig, NULL, &cur) == 0);
    void *h = (cur.sa_flags & SA_SIGINFO) ? (void *)cur.sa_sigaction : (void *)cur.sa_handler;
    int want = g_disp[i].flags, have = cur.sa_flags & (SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND);
    if (h != g_disp[i].handler || have != want ||
        sigismember(&cur.sa_mask, SIGUSR2) != g_disp[i].masks_usr2)
      return 0;
  }
  return 1;
}

static void wait_for(volatile sig_atomic_t *counter, int sig) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  while (*counter == 0) {
    sigset_t wait_mask = old;
    sigdelset(&wait_mask, sig);
    sigsuspend(&wait_mask);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int posix_timer = (int)arg_long(argc, argv, 3, 0);
  CHECK(steps >= 60);

  g_alt = malloc(g_alt_size);
  CHECK(g_alt != NULL);
  stack_t ss = {.ss_sp = g_alt, .ss_size = g_alt_size, .ss_flags = 0};
  CHECK(sigaltstack(&ss, NULL) == 0);

  install(SIGUSR1, (void *)on_usr1, SA_SIGINFO | SA_ONSTACK | SA_RESTART, 1);
  install(SIGUSR2, (void *)on_usr2, SA_SIGINFO, 0);
  install(SIGWINCH, (void *)on_winch, SA_SIGINFO | SA_RESTART, 0);
  install(SIGALRM, (void *)on_alrm, SA_RESTART, 0);
  install(SIGRTMIN, (void *)on_rt, SA_SIGINFO, 1);
  install(SIGRTMIN + 1, (void *)on_ptimer, SA_SIGINFO, 0);
  install(SIGHUP, (void *)SIG_IGN, 0, 0);

  timer_t ptimer;
  for (long step = 1; step <= steps; step++) {
    union sigval v = {.sival_int = (int)step};
    CHECK(pthread_sigqueue(pthread_self(), SIGUSR1, v) == 0);

    if (step == 2) {
      struct itimerval it = {{0, 0}, {2, 0}};
      CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    } else if (step == 3) {
      sigset_t b;
      sigemptyset(&b);
      sigaddset(&b, SIGUSR2);
      sigaddset(&b, SIGRTMIN);
      sigaddset(&b, SIGWINCH);
      CHECK(pthread_sigmask(SIG_BLOCK, &b, NULL) == 0);
      CHECK(raise(SIGUSR2) == 0);
      for (int i = 1; i <= 3; i++) {
        union sigval rv = {.sival_int = i};
        CHECK(pthread_sigqueue(pthread_self(), SIGRTMIN, rv) == 0);
      }
      CHECK(kill(getpid(), SIGWINCH) == 0);
    } else if (step == 5 && posix_timer) {
      struct sigevent sev;
      memset(&sev, 0, sizeof sev);
      sev.sigev_notify = SIGEV_SIGNAL;
      sev.sigev_signo = SIGRTMIN + 1;
      sev.sigev_value.sival_int = 77;
      CHECK(timer_create(CLOCK_MONOTONIC, &sev, &ptimer) == 0);
      struct itimerspec its = {{0, 0}, {1, 500000000L}};
      CHECK(timer_settime(ptimer, 0, &its, NULL) == 0);
    } else if (step == 30 || step == 31 || step == 32) {
      sigset_t u;
      sigemptyset(&u);
      sigaddset(&u, step == 30 ? SIGUSR2 : step == 31 ? SIGWINCH : SIGRTMIN);
      CHECK(pthread_sigmask(SIG_UNBLOCK, &u, NULL) == 0);
      if (step == 30) printf("usr2 delivered count %d code %d\n", (int)usr2_count, (int)usr2_code);
      if (step == 31) printf("winch delivered count %d code %d\n", (int)winch_count, (int)winch_code);
      if (step == 32)
        printf("rt delivered count %d values %d %d %d\n", (int)rt_count, (int)rt_values[0],
               (int)rt_values[1], (int)rt_values[2]);
    } else if (step == 44) {
      wait_for(&alrm_count, SIGALRM);
      printf("itimer fired count %d\n", (int)alrm_count);
      alrm_count = 0;
    } else if (step == 45) {
      alarm(1);
    } else if (step == 50 && posix_timer) {
      wait_for(&ptimer_count, SIGRTMIN + 1);
      printf("posix timer fired count %d value %d overrun %d\n", (int)ptimer_count,
             (int)ptimer_value, timer_getoverrun(ptimer));
    } else if (step == 60) {
      wait_for(&alrm_count, SIGALRM);
      printf("alarm fired count %d\n", (int)alrm_count);
    }

    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    stack_t now;
    CHECK(sigaltstack(NULL, &now) == 0);
    int alt_ok = now.ss_sp == g_alt && now.ss_size == g_alt_size && !(now.ss_flags & SS_DISABLE);
    printf("step %ld usr1 %d code %d value %d on_alt %d masked %d blocked %d%d%d winch %d "
           "disp %d altstack %d\n",
           step, (int)usr1_count, (int)usr1_code, (int)usr1_value, (int)usr1_on_alt,
           (int)usr1_masked, sigismember(&cur, SIGUSR2), sigismember(&cur, SIGWINCH),
           sigismember(&cur, SIGRTMIN), (int)winch_count, dispositions_ok(), alt_ok);
    sleep_ms(delay);
  }
  printf("done usr1 %d usr2 %d rt %d alarms %d\n", (int)usr1_count, (int)usr2_count, (int)rt_count,
         (int)alrm_count);
  return 0;
}
