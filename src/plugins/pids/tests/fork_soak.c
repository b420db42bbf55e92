/* fork_soak: several threads start children continuously, each in one of the ways programs do
 * (fork + _exit, fork + exec, vfork + exec, posix_spawn, system, popen), and check that every
 * child can be waited for and exited with the status it was given. Checkpoints taken back to
 * back while it runs must lose none of them.
 * usage: fork_soak [STEPS=200] [THREADS=4] [CHILDREN_PER_STEP=3]
 *        fork_soak --exit CODE   (the exec'd child: exits with CODE)
 * Each step, every thread starts CHILDREN_PER_STEP children one after another; then the main
 * thread prints "step N ok" (deterministic). A child that cannot be waited for (ECHILD), is
 * killed by a signal, or exits with another status is reported on stdout and stderr as
 * "LOST ..." (the output then differs from an uninterrupted run) and counted in the last line.
 * With STASIS_SOAK_FINISH_FILE set (tests/soak_driver.py sets it), the threads go on starting
 * children after the last step, printing "fork_soak: hold round N" on stderr only, until that file
 * exists in the working directory: the computation lasts as long as the checkpoints need however
 * fast this machine forks, and the output stays the same as an uninterrupted run's. */
#include "target_common.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *g_self;
static long g_children_per_step;
static pthread_barrier_t g_start, g_done;
static long g_steps;
/* Set by the main thread between barriers: every thread sees it after the same g_start. */
static volatile int g_stop;
static volatile int g_holding;
static long g_lost;
static long g_waited;
static pthread_mutex_t g_count_lock = PTHREAD_MUTEX_INITIALIZER;

enum { kFork, kForkExec, kVforkExec, kSpawn, kSystem, kPopen, kMethods };
static const char *const kMethodNames[kMethods] = {"fork", "fork+exec", "vfork+exec",
                                                   "posix_spawn", "system", "popen"};

static void lost(int thread, long step, int method, const char *what, long detail) {
  pthread_mutex_lock(&g_count_lock);
  g_lost++;
  pthread_mutex_unlock(&g_count_lock);
  printf("LOST thread %d step %ld %s: %s %ld\n", thread, step, kMethodNames[method], what, detail);
  fprintf(stderr, "fork_soak: LOST thread %d step %ld %s: %s %ld\n", thread, step,
          kMethodNames[method], what, detail);
}

/* The status of a waited-for child against the code it was given. */
static void check_status(int thread, long step, int method, int status, int code) {
  if (WIFSIGNALED(status))
    lost(thread, step, method, "child killed by signal", WTERMSIG(status));
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
    lost(thread, step, method, "child exit status", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void wait_child(int thread, long step, int method, pid_t pid, int code) {
  if (pid < 0) {
    lost(thread, step, method, "could not start a child, errno", errno);
    return;
  }
  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r != pid) {
    lost(thread, step, method, r < 0 ? "waitpid failed, errno" : "waitpid returned another pid",
         r < 0 ? errno : r);
    fprintf(stderr, "fork_soak:   (the child's pid was %ld)\n", (long)pid);
    return;
  }
  check_status(thread, step, method, status, code);
}

static void one_child(int thread, long step, int method, int code) {
  char code_text[16];
  snprintf(code_text, sizeof code_text, "%d", code);
  char *const child_argv[] = {(char *)g_self, (char *)"--exit", code_text, NULL};
  switch (method) {
    case kFork: {
      pid_t pid = fork();
      if (pid == 0) _exit(code);
      wait_child(thread, step, method, pid, code);
      break;
    }
    case kForkExec: {
      pid_t pid = fork();
      if (pid == 0) {
        execv(g_self, child_argv);
        _exit(127);
      }
      wait_child(thread, step, method, pid, code);
      break;
    }
    case kVforkExec: {
      pid_t pid = vfork();
      if (pid == 0) {
        execv(g_self, child_argv);
        _exit(127);
      }
      wait_child(thread, step, method, pid, code);
      break;
    }
    case kSpawn: {
      pid_t pid = -1;
      int rc = posix_spawn(&pid, g_self, NULL, NULL, child_argv, environ);
      if (rc != 0) {
        errno = rc;
        pid = -1;
      }
      wait_child(thread, step, method, pid, code);
      break;
    }
    case kSystem: {
      char command[64];
      snprintf(command, sizeof command, "exit %d", code);
      int status = system(command);
      if (status < 0)
        lost(thread, step, method, "system() failed, errno", errno);
      else
        check_status(thread, step, method, status, code);
      break;
    }
    case kPopen: {
      char command[64];
      snprintf(command, sizeof command, "echo %d; exit %d", code, code);
      FILE *f = popen(command, "r");
      if (!f) {
        lost(thread, step, method, "popen() failed, errno", errno);
        break;
      }
      char line[32] = "";
      if (!fgets(line, sizeof line, f) || atoi(line) != code)
        lost(thread, step, method, "popen read", atoi(line));
      int status = pclose(f);
      if (status < 0)
        lost(thread, step, method, "pclose() failed, errno", errno);
      else
        check_status(thread, step, method, status, code);
      break;
    }
  }
  if (!g_holding) {
    pthread_mutex_lock(&g_count_lock);
    g_waited++;
    pthread_mutex_unlock(&g_count_lock);
  }
}

static void *starter(void *arg) {
  int thread = (int)(long)arg;
  for (long step = 1;; step++) {
    pthread_barrier_wait(&g_start);
    if (g_stop) break;
    for (long i = 0; i < g_children_per_step; i++) {
      int method = (int)((thread + step * g_children_per_step + i) % kMethods);
      int code = (int)((thread * 31 + step * 7 + i) % 100) + 1;
      one_child(thread, step, method, code);
    }
    pthread_barrier_wait(&g_done);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--exit") == 0) return atoi(argv[2]);
  line_buffered_stdout();
  g_self = argv[0][0] == '/' ? argv[0] : realpath(argv[0], NULL);
  CHECK(g_self != NULL);
  g_steps = arg_long(argc, argv, 1, 200);
  long threads = arg_long(argc, argv, 2, 4);
  g_children_per_step = arg_long(argc, argv, 3, 3);
  CHECK(threads >= 1 && threads <= 64 && g_children_per_step >= 1);
  signal(SIGPIPE, SIG_IGN);
  CHECK(pthread_barrier_init(&g_start, NULL, (unsigned)threads + 1) == 0);
  CHECK(pthread_barrier_init(&g_done, NULL, (unsigned)threads + 1) == 0);
  pthread_t ids[64];
  for (long t = 0; t < threads; t++)
    CHECK(pthread_create(&ids[t], NULL, starter, (void *)t) == 0);
  for (long step = 1; step <= g_steps; step++) {
    pthread_barrier_wait(&g_start);
    pthread_barrier_wait(&g_done);
    printf("step %ld ok\n", step);
  }
  const char *finish_file = getenv("STASIS_SOAK_FINISH_FILE");
  g_holding = 1;
  for (long round = 1; finish_file && access(finish_file, F_OK) != 0; round++) {
    pthread_barrier_wait(&g_start);
    pthread_barrier_wait(&g_done);
    fprintf(stderr, "fork_soak: hold round %ld\n", round);
  }
  g_stop = 1;
  pthread_barrier_wait(&g_start);
  for (long t = 0; t < threads; t++) CHECK(pthread_join(ids[t], NULL) == 0);
  printf("children %ld, lost %ld\n", g_waited, g_lost);
  return g_lost == 0 ? 0 : 1;
}
