/* vpid_proc: /proc paths built from the pids the program sees (its own, a child's, its thread's)
 * keep naming the same processes across restarts.
 * usage: vpid_proc [STEPS=60] [DELAY_MS=50]
 * Each step reaches this process and its child through "/proc/<pid>/..." paths with open, fopen,
 * openat, opendir, readlink, readlinkat, stat, lstat, fstatat, statx and access, and checks that
 * they describe the process "/proc/self" names (the files' contents show the kernel's pids, which
 * change at a restart: they are compared with each other, never printed). One letter per call:
 * y = it reached the right process. */
#include "target_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static long read_text(int fd, char *buf, size_t cap) {
  size_t got = 0;
  for (ssize_t n; got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0;) got += (size_t)n;
  buf[got] = 0;
  return (long)got;
}

static long file_text(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  long n = read_text(fd, buf, cap);
  close(fd);
  return n;
}

/* The first field of a /proc/PID/stat text: the kernel's pid of that process. */
static long stat_pid(const char *text) { return strtol(text, NULL, 10); }

static long status_field(FILE *f, const char *name) {
  char line[256];
  size_t len = strlen(name);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, name, len) == 0) return strtol(line + len, NULL, 10);
  return -1;
}

static int same_link(const char *a, const char *b, int dirfd_style) {
  char x[512], y[512];
  ssize_t n = dirfd_style ? readlinkat(AT_FDCWD, a, x, sizeof x - 1) : readlink(a, x, sizeof x - 1);
  ssize_t m = readlink(b, y, sizeof y - 1);
  if (n <= 0 || m <= 0) return 0;
  x[n] = y[m] = 0;
  return strcmp(x, y) == 0;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int ready[2];
  CHECK(pipe(ready) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {  /* named, then waits for the parent's SIGTERM */
    close(ready[0]);
    prctl(PR_SET_NAME, "vpid_child");
    close(ready[1]);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  CHECK(read(ready[0], &c, 1) == 0);
  close(ready[0]);
  pid_t self = getpid();
  char path[128], other[128], buf[4096], mine[4096];
  for (long step = 1; step <= steps; step++) {
    char result[16];
    int k = 0;
    /* open: /proc/<pid>/stat is this process's */
    snprintf(path, sizeof path, "/proc/%d/stat", (int)self);
    CHECK(file_text("/proc/self/stat", mine, sizeof mine) > 0);
    result[k++] = file_text(path, buf, sizeof buf) > 0 && stat_pid(buf) == stat_pid(mine) ? 'y' : 'n';
    /* fopen: the child's status names it and gives this process as its parent */
    snprintf(path, sizeof path, "/proc/%d/status", (int)child);
    FILE *f = fopen(path, "r");
    long parent = -1;
    char name[64] = "";
    if (f) {
      char line[256];
      while (fgets(line, sizeof line, f))
        if (strncmp(line, "Name:", 5) == 0) sscanf(line + 5, "%63s", name);
      rewind(f);
      parent = status_field(f, "PPid:");
      fclose(f);
    }
    result[k++] = strcmp(name, "vpid_child") == 0 && parent == stat_pid(mine) ? 'y' : 'n';
    /* openat: /proc/<pid>/cmdline */
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)self);
    int fd = openat(AT_FDCWD, path, O_RDONLY);
    long n = fd >= 0 ? read_text(fd, buf, sizeof buf) : -1;
    if (fd >= 0) close(fd);
    long m = file_text("/proc/self/cmdline", mine, sizeof mine);
    result[k++] = n > 0 && n == m && memcmp(buf, mine, (size_t)n) == 0 ? 'y' : 'n';
    /* opendir: /proc/<pid>/task holds the thread gettid() names */
    snprintf(path, sizeof path, "/proc/%d/task/%d", (int)self, (int)gettid());
    DIR *d = opendir(path);
    result[k++] = d ? 'y' : 'n';
    if (d) closedir(d);
    /* readlink, readlinkat (through the task directory) */
    snprintf(path, sizeof path, "/proc/%d/exe", (int)self);
    result[k++] = same_link(path, "/proc/self/exe", 0) ? 'y' : 'n';
    snprintf(path, sizeof path, "/proc/%d/task/%d/cwd", (int)self, (int)gettid());
    result[k++] = same_link(path, "/proc/self/cwd", 1) ? 'y' : 'n';
    /* stat, lstat, fstatat, statx: the child's directory is owned by us; its stat file exists */
    struct stat st, st2;
    snprintf(path, sizeof path, "/proc/%d", (int)child);
    result[k++] = stat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() ? 'y' : 'n';
    snprintf(path, sizeof path, "/proc/%d/exe", (int)child);
    result[k++] = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? 'y' : 'n';
    snprintf(path, sizeof path, "/proc/%d/exe", (int)self);
    snprintf(other, sizeof other, "/proc/self/exe");
    result[k++] = fstatat(AT_FDCWD, path, &st, 0) == 0 && stat(other, &st2) == 0 &&
                          st.st_ino == st2.st_ino && st.st_dev == st2.st_dev ? 'y' : 'n';
    struct statx sx;
    snprintf(path, sizeof path, "/proc/%d/status", (int)child);
    result[k++] = statx(AT_FDCWD, path, 0, STATX_MODE, &sx) == 0 && S_ISREG(sx.stx_mode) ? 'y' : 'n';
    /* access, faccessat */
    result[k++] = access(path, R_OK) == 0 ? 'y' : 'n';
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)self, (int)gettid());
    result[k++] = faccessat(AT_FDCWD, path, R_OK, 0) == 0 ? 'y' : 'n';
    result[k] = 0;
    printf("step %ld proc %s\n", step, result);
    sleep_ms(delay);
  }
  CHECK(kill(child, SIGTERM) == 0);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  printf("child ended by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  return 0;
}
