/* process_attrs: per-process and per-thread attributes that a restarted process must get back,
 * printed at every step (the program sets all of them to non-default values first):
 *   umask, RLIMIT_NOFILE/RLIMIT_CORE/RLIMIT_STACK soft limits, nice value, the working directory
 *   (a subdirectory of DIR, printed relative to DIR), the process name (prctl PR_SET_NAME), a
 *   second thread's name (pthread_setname_np), /proc/self/exe, /proc/self/comm and argv[0] as
 *   seen through /proc/self/cmdline, PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS, the environment
 *   variable the program set itself.
 * usage: process_attrs DIR [STEPS=50] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <limits.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile int g_stop;
static void *idle_thread(void *arg) {
  (void)arg;
  while (!g_stop) sleep_ms(20);
  return NULL;
}

static void read_small(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  size_t got = 0;
  if (f) {
    got = fread(buf, 1, n - 1, f);
    fclose(f);
  }
  buf[got] = '\0';
  for (size_t i = 0; i < got; i++)
    if (buf[i] == '\n') buf[i] = '\0';
}

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: process_attrs DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  char dir[PATH_MAX];
  CHECK(realpath(argv[1], dir) != NULL);
  long steps = arg_long(argc, argv, 2, 50);
  long delay = arg_long(argc, argv, 3, 50);

  umask(027);
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  rl.rlim_cur = 321 < rl.rlim_max ? 321 : rl.rlim_max;
  CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
  CHECK(getrlimit(RLIMIT_CORE, &rl) == 0);
  rl.rlim_cur = 0;
  CHECK(setrlimit(RLIMIT_CORE, &rl) == 0);
  CHECK(getrlimit(RLIMIT_STACK, &rl) == 0);
  rl.rlim_cur = 6 << 20;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max) rl.rlim_cur = rl.rlim_max;
  CHECK(setrlimit(RLIMIT_STACK, &rl) == 0);
  errno = 0;
  CHECK(setpriority(PRIO_PROCESS, 0, 7) == 0);
  char sub[PATH_MAX + 16];
  snprintf(sub, sizeof sub, "%s/work-sub", dir);
  mkdir(sub, 0755);
  CHECK(chdir(sub) == 0);
  CHECK(prctl(PR_SET_NAME, "attrs-main", 0, 0, 0) == 0);
  CHECK(setenv("ATTRS_SECRET_VALUE", "forty-two", 1) == 0);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, idle_thread, NULL) == 0);
  CHECK(pthread_setname_np(th, "attrs-idle") == 0);

  for (long step = 1; step <= steps; step++) {
    mode_t m = umask(0);
    umask(m);
    struct rlimit nofile, core, stack;
    getrlimit(RLIMIT_NOFILE, &nofile);
    getrlimit(RLIMIT_CORE, &core);
    getrlimit(RLIMIT_STACK, &stack);
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, 0);
    char cwd[PATH_MAX], name[32] = "", tname[32] = "", exe[PATH_MAX] = "", comm[64], cmdline[PATH_MAX];
    const char *rel = "?";
    if (getcwd(cwd, sizeof cwd) && strncmp(cwd, dir, strlen(dir)) == 0) rel = cwd + strlen(dir);
    prctl(PR_GET_NAME, name, 0, 0, 0);
    pthread_getname_np(th, tname, sizeof tname);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    read_small("/proc/self/comm", comm, sizeof comm);
    read_small("/proc/self/cmdline", cmdline, sizeof cmdline);
    const char *env = getenv("ATTRS_SECRET_VALUE");
    printf("step %ld umask %03o nofile %llu core %llu stack %llu nice %d cwd %s name %s thread %s "
           "exe %s comm %s argv0 %s dumpable %d nnp %d env %s\n",
           step, (unsigned)m, (unsigned long long)nofile.rlim_cur, (unsigned long long)core.rlim_cur,
           (unsigned long long)stack.rlim_cur, nice_now, rel, name, tname, base(exe), comm,
           base(cmdline), prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
           env ? env : "(unset)");
    sleep_ms(delay);
  }
  g_stop = 1;
  CHECK(pthread_join(th, NULL) == 0);
  printf("done steps %ld\n", steps);
  return 0;
}
