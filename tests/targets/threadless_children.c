/* Children that never start a thread, call no wrapper of the runtime and exec nothing more:
 * under Stasis they have no checkpoint thread until a checkpoint needs them (the runtime's
 * deferred thread), and it must still take them in, wherever each one is:
 *   reader    blocked in read() inside libc (the system call is made again after the signal);
 *   spinner   computing in its own code, looking at its request pipe without blocking;
 *   execed    this program exec'd again as a reader (its thread starts at once after the exec;
 *             the fork child before it has none);
 *   orphan    a reader whose parent has exited (its thread starts on the parent-death signal).
 * Each step the parent sends every child a request and prints their answers. At step 2 it
 * prints how many threads the reader and the spinner have: 1, with or without Stasis, until a
 * checkpoint.
 *
 * usage: threadless_children STEPS DELAY_MS [stay]
 * (stay: the children outlive the parent, as a daemon's workers would: `stasis kill` must end
 * them; test cli.kill_tree) */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "target_common.h"

enum { kReader, kSpinner, kExeced, kOrphan, kKinds };
static const char *const kNames[kKinds] = {"reader", "spinner", "execed", "orphan"};

static void write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);
    p += w;
    n -= (size_t)w;
  }
}

static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Answer k: a value of k alone, made the slow way so that the spinner computes for a while. */
static uint64_t answer(uint64_t k, long rounds) {
  uint64_t s = k * 7919;
  uint64_t h = FNV_INIT;
  for (long i = 0; i < rounds; i++) {
    uint64_t v = splitmix64(&s);
    h = fnv1a(h, &v, sizeof v);
  }
  return h;
}

static int g_stay;

static void parent_gone(void) {
  if (g_stay)
    for (;;) pause();
  _exit(0);
}

static void reader(int requests, int answers) {
  for (uint64_t k = 1;; k++) {
    char c;
    if (read_all(requests, &c, 1) != 0) parent_gone();  /* the parent closed: done */
    uint64_t a = answer(k, 1000);
    write_all(answers, &a, sizeof a);
  }
}

static void spinner(int requests, int answers) {
  fcntl(requests, F_SETFL, O_NONBLOCK);
  volatile uint64_t idle = 0;
  for (uint64_t k = 1;;) {
    char c;
    ssize_t r = read(requests, &c, 1);
    if (r == 0) parent_gone();
    if (r < 0) {
      for (int i = 0; i < 2000000; i++) idle += (uint64_t)i;  /* in its own code, no call */
      continue;
    }
    uint64_t a = answer(k++, 200000);
    write_all(answers, &a, sizeof a);
  }
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "exec-reader") == 0) {
    reader(atoi(argv[2]), atoi(argv[3]));
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: %s STEPS DELAY_MS\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  g_stay = argc > 3 && strcmp(argv[3], "stay") == 0;
  int steps = atoi(argv[1]);
  long delay = atol(argv[2]);
  int to_child[kKinds], from_child[kKinds];
  pid_t pids[kKinds];
  for (int kind = 0; kind < kKinds; kind++) {
    int req[2], ans[2];
    if (pipe(req) != 0 || pipe(ans) != 0) return 4;
    pid_t pid = fork();
    if (pid < 0) return 5;
    if (pid == 0) {
      close(req[1]);
      close(ans[0]);
      for (int other = 0; other < kind; other++) {
        close(to_child[other]);
        close(from_child[other]);
      }
      if (kind == kReader) reader(req[0], ans[1]);
      if (kind == kSpinner) spinner(req[0], ans[1]);
      if (kind == kExeced) {
        char in[16], out[16];
        snprintf(in, sizeof in, "%d", req[0]);
        snprintf(out, sizeof out, "%d", ans[1]);
        execl("/proc/self/exe", argv[0], "exec-reader", in, out, (char *)NULL);
        _exit(6);
      }
      /* kOrphan: the grandchild answers; its parent exits at once. */
      pid_t grandchild = fork();
      if (grandchild == 0) reader(req[0], ans[1]);
      _exit(grandchild > 0 ? 0 : 7);
    }
    close(req[0]);
    close(ans[1]);
    to_child[kind] = req[1];
    from_child[kind] = ans[0];
    pids[kind] = pid;
  }
  int status;
  waitpid(pids[kOrphan], &status, 0);  /* the orphan's parent */
  signal(SIGPIPE, SIG_IGN);
  for (int step = 1; step <= steps; step++) {
    printf("step %d", step);
    for (int kind = 0; kind < kKinds; kind++) {
      write_all(to_child[kind], "?", 1);
      uint64_t a;
      if (read_all(from_child[kind], &a, sizeof a) != 0) {
        printf(" %s LOST\n", kNames[kind]);
        return 8;
      }
      printf(" %s=%016llx", kNames[kind], (unsigned long long)a);
    }
    printf("\n");
    if (step == 2) {  /* every child answered: each has started (and exec'd) */
      printf("threads:");
      for (int kind = kReader; kind <= kSpinner; kind++) {
        char path[64], text[4096];
        snprintf(path, sizeof path, "/proc/%d/status", (int)pids[kind]);
        FILE *f = fopen(path, "r");
        int threads = -1;
        while (f && fgets(text, sizeof text, f))
          if (sscanf(text, "Threads: %d", &threads) == 1) break;
        if (f) fclose(f);
        printf(" %s=%d", kNames[kind], threads);
      }
      printf("\n");
    }
    sleep_ms(delay);
  }
  for (int kind = 0; kind < kKinds; kind++) close(to_child[kind]);
  for (int kind = 0; kind < kKinds - 1; kind++) waitpid(pids[kind], &status, 0);
  printf("done\n");
  return 0;
}
