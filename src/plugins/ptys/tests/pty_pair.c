/* A pseudo-terminal between two processes: the parent holds the master, the child is a session
 * leader whose controlling terminal and stdin/stdout are the slave. Each step the parent writes a
 * line to the master; the child answers at once (upper-cased, with what it sees of its terminal:
 * controlling terminal, foreground group, window size); the parent waits a while before reading
 * the answer, so a checkpoint usually finds it unread in the pty. The slave is in canonical mode
 * without echo and with output processing (ONLCR turns the child's "\n" into "\r\n", shown as
 * <CR>), so an answer put back with its "\r\n" processed twice shows. Every line also shows the
 * termios flags and window size the parent reads back from the master.
 *
 * With "unread" as third argument there is no child: the parent writes a line to the master and
 * reads it from the slave only at the end, so a checkpoint meanwhile must be refused (input the
 * slave's reader has not read).
 *
 * usage: pty_pair [STEPS=40] [DELAY_MS=100] [unread] */
#include <ctype.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "target_common.h"

static void child(int slave) {
  CHECK(setsid() >= 0);
  CHECK(ioctl(slave, TIOCSCTTY, 0) == 0);
  CHECK(dup2(slave, 0) == 0 && dup2(slave, 1) == 1);
  close(slave);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    if (strcmp(line, "quit\n") == 0) break;
    line[strcspn(line, "\n")] = 0;
    for (char *c = line; *c; c++) *c = (char)toupper((unsigned char)*c);
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY);
    struct winsize ws = {0};
    ioctl(0, TIOCGWINSZ, &ws);
    printf("%s ctty %s fg %s size %ux%u\n", line, tty >= 0 ? "yes" : "no",
           tcgetpgrp(0) == getpgrp() ? "yes" : "no", ws.ws_row, ws.ws_col);
    fflush(stdout);
    if (tty >= 0) close(tty);
  }
  _exit(7);
}

/* One answer line from the master, "\r" shown as <CR>. */
static void read_answer(int master, char *out, size_t cap) {
  size_t n = 0;
  char c;
  while (n + 5 < cap) {
    ssize_t got = read(master, &c, 1);
    if (got < 0 && errno == EINTR) continue;
    CHECK(got == 1);
    if (c == '\n') break;
    if (c == '\r') {
      memcpy(out + n, "<CR>", 4);
      n += 4;
    } else {
      out[n++] = c;
    }
  }
  out[n] = 0;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay_ms = arg_long(argc, argv, 2, 100);
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  CHECK(slave >= 0);
  struct termios t;
  CHECK(tcgetattr(slave, &t) == 0);
  t.c_lflag = ICANON | ISIG | IEXTEN;  /* cooked, no echo */
  t.c_iflag = ICRNL;
  t.c_oflag = OPOST | ONLCR;
  t.c_cc[VEOF] = 4;
  CHECK(tcsetattr(slave, TCSANOW, &t) == 0);
  struct winsize ws = {33, 101, 0, 0};
  CHECK(ioctl(master, TIOCSWINSZ, &ws) == 0);
  if (argc > 3 && strcmp(argv[3], "unread") == 0) {
    CHECK(write(master, "typed ahead\n", 12) == 12);
    for (long step = 1; step <= steps; step++) {
      printf("step %ld: input waiting\n", step);
      sleep_ms(delay_ms);
    }
    char line[64] = {0};
    CHECK(read(slave, line, sizeof line - 1) == 12);
    printf("read at the end: %s", line);
    return 0;
  }
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(master);
    child(slave);
  }
  close(slave);
  uint64_t seed = 42;
  for (long step = 1; step <= steps; step++) {
    char line[64], answer[512];
    snprintf(line, sizeof line, "line %ld word%03u\n", step, (unsigned)(splitmix64(&seed) % 1000));
    CHECK(write(master, line, strlen(line)) == (ssize_t)strlen(line));
    sleep_ms(delay_ms);
    read_answer(master, answer, sizeof answer);
    struct termios now;
    struct winsize size;
    CHECK(tcgetattr(master, &now) == 0 && ioctl(master, TIOCGWINSZ, &size) == 0);
    printf("step %ld: %s | lflag %#x oflag %#x iflag %#x veof %d size %ux%u\n", step, answer,
           (unsigned)now.c_lflag, (unsigned)now.c_oflag, (unsigned)now.c_iflag, now.c_cc[VEOF],
           size.ws_row, size.ws_col);
    if (step == steps / 2) {  /* the window grows mid-run: restart must bring back the new size */
      ws.ws_row = 50;
      ws.ws_col = 132;
      CHECK(ioctl(master, TIOCSWINSZ, &ws) == 0);
    }
  }
  CHECK(write(master, "quit\n", 5) == 5);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char c;
  ssize_t end = read(master, &c, 1);
  printf("child exit %d, master then reads %zd (%s)\n", WEXITSTATUS(status), end,
         end < 0 && errno == EIO ? "EIO" : "other");
  return 0;
}
