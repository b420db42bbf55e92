/* vpid_clash: a process or thread started after a restart whose kernel pid is a pid the
 * computation already uses (this process's own, from before the restart) still gets one of its own.
 * usage: vpid_clash [STEPS=40] [DELAY_MS=50]  (needs a pid namespace of its own and root in it:
 * it writes /proc/sys/kernel/ns_last_pid)
 * Each step asks the kernel to hand the next new process this process's pid (taken before a
 * restart, so skipped; free after one), forks a child and checks, one letter each:
 *   f  fork's result is the pid the child sees as its own (after a thread, checked the same way)
 *   d  that pid differs from this process's
 *   w  waitpid(that pid) collects the child, kill(getpid(), 0) still reaches this process
 *   t  the same for a new thread: its gettid() differs from getpid(), and tgkill reaches it
 * When the child's kernel pid did equal this process's pid, a line on stderr says so (the test
 * requires at least one, so it cannot pass without forcing the clash). */
#include "target_common.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first field of a /proc stat file: the kernel's pid or tid (the contents are not translated). */
static long kernel_id(const char *stat_path) {
  char buf[256];
  int fd = open(stat_path, O_RDONLY);
  CHECK(fd >= 0);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  CHECK(n > 0);
  buf[n] = 0;
  return strtol(buf, NULL, 10);
}

static void hand_out_next(long pid) {
  int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
  CHECK(fd >= 0);
  char text[32];
  int len = snprintf(text, sizeof text, "%ld", pid - 1);
  CHECK(write(fd, text, (size_t)len) == len);
  close(fd);
}

struct thread_link {
  int report[2], leave[2];
};

static void *short_thread(void *arg) {
  struct thread_link *link = arg;
  long seen[2] = {gettid(), kernel_id("/proc/thread-self/stat")};
  CHECK(write(link->report[1], seen, sizeof seen) == sizeof seen);
  char c;
  CHECK(read(link->leave[0], &c, 1) == 1);
  return NULL;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  pid_t self = getpid();
  for (long step = 1; step <= steps; step++) {
    /* a thread first: its tid is then the first to take this process's kernel pid after a restart */
    struct thread_link tl;
    CHECK(pipe(tl.report) == 0 && pipe(tl.leave) == 0);
    hand_out_next(self);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, short_thread, &tl) == 0);
    long tseen[2];
    CHECK(read(tl.report[0], tseen, sizeof tseen) == sizeof tseen);
    char t_ok = tseen[0] != self && tgkill(getpid(), (pid_t)tseen[0], 0) == 0 ? 'y' : 'n';
    CHECK(write(tl.leave[1], "x", 1) == 1);
    CHECK(pthread_join(thread, NULL) == 0);
    for (int i = 0; i < 2; i++) close(tl.report[i]), close(tl.leave[i]);
    if (tseen[1] == self) fprintf(stderr, "vpid_clash: step %ld: the new thread's kernel tid is our pid\n", step);
    sleep_ms(delay);  /* the kernel frees the thread's id a little after pthread_join returns */
    int link[2];
    CHECK(pipe(link) == 0);
    hand_out_next(self);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
      long seen[2] = {getpid(), kernel_id("/proc/self/stat")};
      CHECK(write(link[1], seen, sizeof seen) == sizeof seen);
      _exit(0);
    }
    close(link[1]);
    long seen[2] = {0, 0};
    CHECK(read(link[0], seen, sizeof seen) == sizeof seen);
    close(link[0]);
    int status = -1;
    char r[5];
    r[0] = seen[0] == child ? 'y' : 'n';
    r[1] = child != self ? 'y' : 'n';
    r[2] = waitpid(child, &status, 0) == child && WIFEXITED(status) && kill(getpid(), 0) == 0 &&
                   getpid() == self ? 'y' : 'n';
    r[3] = t_ok;
    if (seen[1] == self) fprintf(stderr, "vpid_clash: step %ld: the new child's kernel pid is ours\n", step);
    r[4] = 0;
    printf("step %ld fdwt %s\n", step, r);
    sleep_ms(delay);
  }
  return 0;
}
