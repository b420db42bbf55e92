/* self_echo: every step a value goes into a descriptor of the chosen kind, held by the process
 * itself, and comes back out of it (or, for fork and netlink, is echoed in place while the
 * descriptor stays open). Once a list of what Stasis refused, now mostly what it restores:
 *   fork    a child process that lives as long as the parent (a process tree; supported)
 *   pipe    a pipe between two descriptors of the process, used every step (supported)
 *   socket  a socketpair(AF_UNIX), used every step (supported)
 *   dgram   a socketpair(AF_UNIX, SOCK_DGRAM) (supported)
 *   named-dgram  a Unix datagram socket bound to an abstract name, connected to itself (supported)
 *   udp     a UDP socket on loopback connected to itself (supported)
 *   netlink a netlink route socket (refused: the kernel's end cannot be saved; the program runs on)
 * usage: self_echo fork|pipe|socket|dgram|named-dgram|udp|netlink [STEPS=40] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: self_echo fork|pipe|socket|dgram|named-dgram|udp|netlink [STEPS] [DELAY_MS]\n");
    return 2;
  }
  const char *mode = argv[1];
  long steps = arg_long(argc, argv, 2, 40);
  long delay = arg_long(argc, argv, 3, 50);
  int fds[2] = {-1, -1};
  pid_t child = -1;
  if (strcmp(mode, "fork") == 0) {
    int gate[2];
    CHECK(pipe(gate) == 0);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) { /* lives until the parent closes the gate */
      close(gate[1]);
      char c;
      while (read(gate[0], &c, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
    close(gate[0]);
    fds[1] = gate[1];
  } else if (strcmp(mode, "pipe") == 0) {
    CHECK(pipe(fds) == 0);
  } else if (strcmp(mode, "socket") == 0) {
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  } else if (strcmp(mode, "dgram") == 0) {
    CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) == 0);
  } else if (strcmp(mode, "named-dgram") == 0) {
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un name = {.sun_family = AF_UNIX};
    snprintf(name.sun_path + 1, sizeof name.sun_path - 1, "stasis-test-%d", (int)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name.sun_path + 1));
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&name, len) == 0);
    CHECK(connect(s, (struct sockaddr *)&name, len) == 0);
    fds[0] = fds[1] = s;
  } else if (strcmp(mode, "udp") == 0) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in self = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof self;
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&self, sizeof self) == 0);
    CHECK(getsockname(s, (struct sockaddr *)&self, &len) == 0);
    CHECK(connect(s, (struct sockaddr *)&self, sizeof self) == 0);
    fds[0] = fds[1] = s;
  } else if (strcmp(mode, "netlink") == 0) {
    int s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    CHECK(s >= 0);
    child = 0; /* nothing to echo through it: the values are echoed in place */
    fds[0] = fds[1] = s;
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  uint64_t seed = 5;
  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed), back = 0;
    if (child < 0) {
      CHECK(write(fds[1], &v, 8) == 8);
      CHECK(read(fds[0], &back, 8) == 8);
    } else {
      back = v;
    }
    printf("step %ld value %llu echoed %d\n", step, (unsigned long long)(v % 100003), back == v);
    sleep_ms(delay);
  }
  if (child > 0) {
    close(fds[1]);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  printf("done %s\n", mode);
  return 0;
}
