/* tls_rseq: per-thread state that lives outside ordinary memory:
 *   - __thread variables (.tdata initialised and .tbss) at unchanged addresses
 *   - glibc's rseq registration (glibc >= 2.35 registers every thread; sched_getcpu() reads it):
 *     re-registering the same area must fail with EBUSY, i.e. the kernel still knows it
 *   - gettid()/getpid() consistency, pthread_self() unchanged, pthread_kill() reaching the right
 *     thread (glibc keeps each thread's kernel tid inside struct pthread)
 *   - pthread_join after restart (needs the kernel's clear_child_tid for every thread)
 * Threads run in lock step with two barriers per step; only the main thread prints.
 * usage: tls_rseq [STEPS=50] [DELAY_MS=50] [NTHREADS=4] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXT 16
static __thread uint64_t tls_counter = 5;
static __thread char tls_buf[256];
static __thread volatile pid_t tls_handled_tid;
static __thread volatile long tls_handled_count;

static int g_n;
static long g_steps;
static pthread_barrier_t g_start, g_end;
static pthread_t g_th[MAXT];
struct result {
  uint64_t value;
  pid_t tid, handled;
  int tls_addr_ok, self_ok, pid_ok, cpu_ok, rseq_ok;
};
static struct result g_res[MAXT];

static void on_usr1(int sig) {
  (void)sig;
  tls_handled_tid = (pid_t)syscall(SYS_gettid);
  tls_handled_count++;
}

static int rseq_registered(void) {
  if (__rseq_size == 0) return 1; /* glibc did not register rseq: nothing to preserve */
  void *area = (char *)__builtin_thread_pointer() + __rseq_offset;
  long rc = syscall(SYS_rseq, area, (unsigned)__rseq_size, 0, RSEQ_SIG);
  if (rc == -1 && errno == EBUSY) return 1;
  if (rc == -1 && errno == EINVAL && __rseq_size < 32) {
    /* older kernels want exactly 32 bytes */
    rc = syscall(SYS_rseq, area, 32u, 0, RSEQ_SIG);
    if (rc == -1 && errno == EBUSY) return 1;
  }
  return 0;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t *my_counter = &tls_counter;
  pthread_t me = pthread_self();
  tls_counter += (uint64_t)id * 1000;
  for (int i = 0; i < 256; i++) tls_buf[i] = (char)(i * (id + 1));
  for (long s = 1; s <= g_steps; s++) {
    pthread_barrier_wait(&g_start);
    tls_counter = tls_counter * 3 + (uint64_t)id;
    char first = tls_buf[0];
    memmove(tls_buf, tls_buf + 1, 255);
    tls_buf[255] = first;
    struct result *r = &g_res[id];
    r->value = fnv1a(tls_counter, tls_buf, sizeof tls_buf);
    r->tid = (pid_t)syscall(SYS_gettid);
    /* main sent SIGUSR1 before the barrier: wait (bounded) until the handler has run here */
    for (int spin = 0; tls_handled_count < s && spin < 20000; spin++) {
      if (spin > 100) sleep_ms(0 + (spin > 1000));
      else sched_yield();
    }
    r->handled = tls_handled_count >= s ? tls_handled_tid : -1;
    r->tls_addr_ok = my_counter == &tls_counter;
    r->self_ok = pthread_equal(me, pthread_self()) && pthread_equal(me, g_th[id]);
    r->pid_ok = getpid() == (pid_t)syscall(SYS_getpid) && r->tid != getpid();
    int cpu = sched_getcpu();
    r->cpu_ok = cpu >= 0 && cpu < CPU_SETSIZE;
    r->rseq_ok = rseq_registered();
    pthread_barrier_wait(&g_end);
  }
  return (void *)(uintptr_t)(tls_counter & 0xffff);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  g_steps = arg_long(argc, argv, 1, 50);
  long delay = arg_long(argc, argv, 2, 50);
  g_n = (int)arg_long(argc, argv, 3, 4);
  CHECK(g_n >= 1 && g_n <= MAXT);
  signal(SIGUSR1, on_usr1);
  CHECK(pthread_barrier_init(&g_start, NULL, (unsigned)g_n + 1) == 0);
  CHECK(pthread_barrier_init(&g_end, NULL, (unsigned)g_n + 1) == 0);
  for (int i = 0; i < g_n; i++) CHECK(pthread_create(&g_th[i], NULL, worker, (void *)(intptr_t)i) == 0);
  uint64_t *main_counter = &tls_counter;
  uint64_t sum = FNV_INIT;
  for (long s = 1; s <= g_steps; s++) {
    int kill_ok = 1;
    for (int i = 0; i < g_n; i++)
      if (pthread_kill(g_th[i], SIGUSR1) != 0) kill_ok = 0;
    pthread_barrier_wait(&g_start);
    pthread_barrier_wait(&g_end);
    tls_counter += 1;
    int ok_tls = main_counter == &tls_counter && tls_counter == (uint64_t)(5 + s);
    int ok_main = (pid_t)syscall(SYS_gettid) == getpid();
    int ok_rseq = rseq_registered();
    int ok_threads = 1, ok_signal = 1;
    for (int i = 0; i < g_n; i++) {
      struct result *r = &g_res[i];
      ok_threads &= r->tls_addr_ok && r->self_ok && r->pid_ok && r->cpu_ok;
      ok_rseq &= r->rseq_ok;
      ok_signal &= r->handled == r->tid;
      for (int j = 0; j < i; j++) ok_threads &= g_res[j].tid != r->tid;
      sum = fnv1a(sum, &r->value, 8);
    }
    printf("step %ld sum %016llx tls %d main %d threads %d rseq %d pthread_kill %d %d\n", s,
           (unsigned long long)sum, ok_tls, ok_main, ok_threads, ok_rseq, kill_ok, ok_signal);
    sleep_ms(delay);
  }
  uint64_t joined = 0;
  for (int i = 0; i < g_n; i++) {
    void *ret;
    CHECK(pthread_join(g_th[i], &ret) == 0);
    joined += (uint64_t)(uintptr_t)ret;
  }
  printf("done joined %d retsum %llu checksum 0x%016llx\n", g_n, (unsigned long long)joined,
         (unsigned long long)sum);
  return 0;
}
