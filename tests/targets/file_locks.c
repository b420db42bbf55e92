/* file_locks: the parent holds a POSIX record write lock and read lock (fcntl F_SETLK), a flock
 * and an OFD lock (F_OFD_SETLK) on files in DIR; a child process, with descriptions of its own,
 * checks each step (F_GETLK, F_OFD_GETLK, flock LOCK_NB) which of them it finds held, and the
 * parent prints what the child saw. Halfway the parent changes its locks (drops the read lock,
 * turns the flock shared, moves the OFD lock), so the locks taken back at a restart must be those
 * of the checkpoint, not the first ones.
 * With a fourth argument `lease`, the parent also holds a read lease (F_SETLEASE) on a file of its
 * own, which a checkpoint must refuse.
 * usage: file_locks DIR [STEPS=40] [DELAY_MS=50] [lease] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_paths[3][4096];

static int open_in(int which) { return open(g_paths[which], O_RDWR | O_CREAT, 0600); }

static void set_range(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  CHECK(fcntl(fd, cmd, &fl) == 0);
}

/* What another process finds when it asks for `type` over the range. */
static const char *probe_range(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  CHECK(fcntl(fd, cmd, &fl) == 0);
  return fl.l_type == F_WRLCK ? "write" : fl.l_type == F_RDLCK ? "read" : "free";
}

static const char *probe_flock(int fd) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    CHECK(flock(fd, LOCK_UN) == 0);
    return "free";
  }
  CHECK(errno == EWOULDBLOCK);
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    CHECK(flock(fd, LOCK_UN) == 0);
    return "shared";
  }
  return "exclusive";
}

static void child(int requests, int answers) {
  int posix = open_in(0), flocked = open_in(1), ofd = open_in(2);
  CHECK(posix >= 0 && flocked >= 0 && ofd >= 0);
  char c;
  while (read(requests, &c, 1) == 1) {
    char line[256];
    int n = snprintf(line, sizeof line, "posix[0,100)=%s posix[200,EOF)=%s flock=%s ofd[10,20)=%s ofd[30,40)=%s",
                     probe_range(posix, F_GETLK, F_WRLCK, 0, 100),
                     probe_range(posix, F_GETLK, F_WRLCK, 200, 0), probe_flock(flocked),
                     probe_range(ofd, F_OFD_GETLK, F_WRLCK, 10, 10),
                     probe_range(ofd, F_OFD_GETLK, F_WRLCK, 30, 10));
    CHECK(write(answers, line, (size_t)n + 1) == n + 1);
  }
  _exit(0);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: file_locks DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  long steps = arg_long(argc, argv, 2, 40), delay = arg_long(argc, argv, 3, 50);
  static const char *const kNames[3] = {"posix.lock", "flock.lock", "ofd.lock"};
  for (int i = 0; i < 3; i++) snprintf(g_paths[i], sizeof g_paths[i], "%s/%s", argv[1], kNames[i]);
  int posix = open_in(0), flocked = open_in(1), ofd = open_in(2);
  CHECK(posix >= 0 && flocked >= 0 && ofd >= 0);
  set_range(posix, F_SETLK, F_WRLCK, 0, 100);
  set_range(posix, F_SETLK, F_RDLCK, 200, 0);
  CHECK(flock(flocked, LOCK_EX | LOCK_NB) == 0);
  set_range(ofd, F_OFD_SETLK, F_WRLCK, 10, 10);
  if (argc > 4 && strcmp(argv[4], "lease") == 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/leased", argv[1]);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    int leased = open(path, O_RDONLY);
    CHECK(leased >= 0 && fcntl(leased, F_SETLEASE, F_RDLCK) == 0);
  }

  int to_child[2], from_child[2];
  CHECK(pipe(to_child) == 0 && pipe(from_child) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(to_child[1]);
    close(from_child[0]);
    child(to_child[0], from_child[1]);
  }
  close(to_child[0]);
  close(from_child[1]);
  for (long step = 0; step < steps; step++) {
    if (step == steps / 2) {
      set_range(posix, F_SETLK, F_UNLCK, 200, 0);
      CHECK(flock(flocked, LOCK_SH | LOCK_NB) == 0);
      set_range(ofd, F_OFD_SETLK, F_UNLCK, 10, 10);
      set_range(ofd, F_OFD_SETLK, F_RDLCK, 30, 10);
    }
    CHECK(write(to_child[1], "?", 1) == 1);
    char answer[256];
    size_t have = 0;
    do CHECK(read(from_child[0], answer + have, 1) == 1);
    while (answer[have++] != 0 && have < sizeof answer);
    printf("step %ld: %s\n", step, answer);
    sleep_ms(delay);
  }
  close(to_child[1]);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("done\n");
  return 0;
}
