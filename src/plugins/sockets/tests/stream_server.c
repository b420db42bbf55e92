/* stream_server: a server on a listening stream socket and its clients, all in one process tree,
 * over a named Unix socket (bound by a relative path in the working directory), TCP over IPv4
 * loopback or TCP over IPv6 loopback (on a port the kernel picks). A long-lived client streams
 * values to the server faster than it reads them, and reads what the server sent only at the end,
 * so bytes are queued in both directions at any moment; both sides checksum the whole stream.
 * Every 10 steps the server forks a short-lived client that connects anew, so after a restart
 * the listener must accept again at the same address.
 * usage: stream_server unix|tcp4|tcp6 [STEPS=60] [DELAY_MS=40] */
#include "target_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

struct Address {
  struct sockaddr_storage storage;
  socklen_t len;
  int family;
};

static struct Address listen_on(const char *kind, int *listener) {
  struct Address a = {0};
  if (strcmp(kind, "unix") == 0) {
    struct sockaddr_un *un = (struct sockaddr_un *)&a.storage;
    un->sun_family = AF_UNIX;
    snprintf(un->sun_path, sizeof un->sun_path, "stasis-server-%d.sock", (int)getpid());
    unlink(un->sun_path);
    a.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1);
    a.family = AF_UNIX;
  } else if (strcmp(kind, "tcp4") == 0) {
    struct sockaddr_in *in = (struct sockaddr_in *)&a.storage;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.len = sizeof *in;
    a.family = AF_INET;
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a.storage;
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    a.len = sizeof *in6;
    a.family = AF_INET6;
  }
  *listener = socket(a.family, SOCK_STREAM, 0);
  int one = 1; /* as servers do, so a restart need not wait for TIME_WAIT connections */
  if (a.family != AF_UNIX) CHECK(setsockopt(*listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
  CHECK(*listener >= 0 && bind(*listener, (struct sockaddr *)&a.storage, a.len) == 0);
  CHECK(listen(*listener, 8) == 0);
  CHECK(getsockname(*listener, (struct sockaddr *)&a.storage, &a.len) == 0);  /* the port picked */
  return a;
}

static int connect_to(const struct Address *a) {
  int s = socket(a->family, SOCK_STREAM, 0);
  CHECK(s >= 0);
  while (connect(s, (const struct sockaddr *)&a->storage, a->len) != 0) CHECK(errno == EINTR);
  return s;
}

static int accept_one(int listener) {
  int c;
  while ((c = accept(listener, NULL, NULL)) < 0) CHECK(errno == EINTR);
  return c;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: stream_server unix|tcp4|tcp6 [STEPS] [DELAY_MS]\n");
    return 2;
  }
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 40);
  int listener;
  struct Address a = listen_on(argv[1], &listener);
  pid_t streamer = fork();
  CHECK(streamer >= 0);
  if (streamer == 0) {
    int s = connect_to(&a);
    uint64_t seed = 3, sum = FNV_INIT;
    for (long step = 1; step <= steps; step++) {
      uint64_t v = splitmix64(&seed);
      transfer_all(s, &v, sizeof v, 1);
      sleep_ms(delay / 4);
    }
    for (long step = 1; step <= steps; step++) {
      uint64_t v;
      transfer_all(s, &v, sizeof v, 0);
      sum = fnv1a(sum, &v, sizeof v);
    }
    transfer_all(s, &sum, sizeof sum, 1);
    _exit(0);
  }
  int conn = accept_one(listener);
  uint64_t seed = 4, sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t v, out = splitmix64(&seed);
    transfer_all(conn, &out, sizeof out, 1);
    transfer_all(conn, &v, sizeof v, 0);
    sum = fnv1a(sum, &v, sizeof v);
    printf("step %ld sum %llu\n", step, (unsigned long long)sum);
    if (step % 10 == 0) {
      pid_t visitor = fork();
      CHECK(visitor >= 0);
      if (visitor == 0) {
        int s = connect_to(&a);
        uint64_t hello = (uint64_t)step * 1000;
        transfer_all(s, &hello, sizeof hello, 1);
        _exit(0);
      }
      int c = accept_one(listener);
      uint64_t hello = 0;
      transfer_all(c, &hello, sizeof hello, 0);
      close(c);
      int status = 0;
      CHECK(waitpid(visitor, &status, 0) == visitor);
      printf("visitor at step %ld said %llu\n", step, (unsigned long long)hello);
    }
    sleep_ms(delay);
  }
  uint64_t streamer_sum = 0;
  transfer_all(conn, &streamer_sum, sizeof streamer_sum, 0);
  int status = 0;
  CHECK(waitpid(streamer, &status, 0) == streamer);
  if (a.family == AF_UNIX) unlink(((struct sockaddr_un *)&a.storage)->sun_path);
  printf("streamer received %llu exit %d\n", (unsigned long long)streamer_sum,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
