/* datagram_peers: a datagram server and two clients in one process tree, over UDP on IPv4 or IPv6
 * loopback, or over Unix datagram sockets with names (a path relative to the working directory,
 * or abstract names). Client 0 is bound to a name of its own and connected to the server; client
 * 1 sends with sendto (UDP: bound by its first send; Unix: bound to an abstract name). Each client
 * keeps WINDOW datagrams of random sizes ahead of the echoes it has read, and the server reads
 * slower than clients send, so datagrams are queued at the server and at the clients at any
 * moment. The server echoes every datagram to its sender's address; both sides checksum every
 * byte, and the server prints every client's sums at the end.
 * usage: datagram_peers udp4|udp6|unix|abstract [STEPS=60] [DELAY_MS=30] */
#include "target_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

enum { kClients = 2, kWindow = 12, kMaxDatagram = 1024 };

struct Message { /* the first bytes of every datagram */
  uint32_t client, seq; /* seq 0: the client is done; `sum` is its checksum of the echoes */
  uint64_t sum;
};

struct Address {
  struct sockaddr_storage storage;
  socklen_t len;
};

static const char *g_kind;
static int g_server_pid; /* names the Unix sockets of this run */

static int family(void) {
  return strcmp(g_kind, "udp4") == 0 ? AF_INET : strcmp(g_kind, "udp6") == 0 ? AF_INET6 : AF_UNIX;
}

/* role: 's' server, '0' / '1' clients. UDP names are loopback with a port the kernel picks. */
static struct Address name_for(char role) {
  struct Address a = {0};
  if (family() == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)&a.storage;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.len = sizeof *in;
  } else if (family() == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a.storage;
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    a.len = sizeof *in6;
  } else {
    struct sockaddr_un *un = (struct sockaddr_un *)&a.storage;
    un->sun_family = AF_UNIX;
    int abstract = strcmp(g_kind, "abstract") == 0 || role == '1';
    snprintf(un->sun_path + abstract, sizeof un->sun_path - 1, "stasis-dgram-%d-%c%s", g_server_pid, role,
             abstract ? "" : ".sock");
    size_t len = strlen(un->sun_path + abstract) + abstract;
    if (!abstract) unlink(un->sun_path);
    a.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
  }
  return a;
}

static int bound_socket(struct Address *a) {
  int s = socket(family(), SOCK_DGRAM, 0);
  CHECK(s >= 0 && bind(s, (struct sockaddr *)&a->storage, a->len) == 0);
  a->len = sizeof a->storage;
  CHECK(getsockname(s, (struct sockaddr *)&a->storage, &a->len) == 0); /* the port picked */
  return s;
}

static size_t fill(uint64_t *seed, char *buf, uint32_t client, uint32_t seq) {
  size_t len = sizeof(struct Message) + (size_t)(splitmix64(seed) % (kMaxDatagram - sizeof(struct Message)));
  struct Message m = {client, seq, 0};
  memcpy(buf, &m, sizeof m);
  for (size_t i = sizeof m; i < len; i++) buf[i] = (char)splitmix64(seed);
  return len;
}

static ssize_t receive(int s, char *buf, struct Address *from) {
  for (;;) {
    if (from) from->len = sizeof from->storage;
    ssize_t n = recvfrom(s, buf, kMaxDatagram, 0, from ? (struct sockaddr *)&from->storage : NULL,
                         from ? &from->len : NULL);
    if (n >= 0) return n;
    CHECK(errno == EINTR);
  }
}

static void run_client(uint32_t client, const struct Address *server, long steps, long delay) {
  int s;
  if (client == 0 || family() == AF_UNIX) {
    struct Address own = name_for((char)('0' + client));
    s = bound_socket(&own);
  } else {
    s = socket(family(), SOCK_DGRAM, 0);
    CHECK(s >= 0);
  }
  if (client == 0) CHECK(connect(s, (const struct sockaddr *)&server->storage, server->len) == 0);
  uint64_t seed = 100 + client, echo_sum = FNV_INIT;
  char buf[kMaxDatagram], echo[kMaxDatagram];
  for (long seq = 1; seq <= steps + kWindow; seq++) {
    if (seq <= steps) {
      size_t len = fill(&seed, buf, client, (uint32_t)seq);
      ssize_t sent = client == 0 ? send(s, buf, len, 0)
                                 : sendto(s, buf, len, 0, (const struct sockaddr *)&server->storage, server->len);
      CHECK(sent == (ssize_t)len);
    }
    if (seq > kWindow) { /* the echo of the datagram sent kWindow before */
      ssize_t n = receive(s, echo, NULL);
      struct Message m;
      CHECK(n >= (ssize_t)sizeof m);
      memcpy(&m, echo, sizeof m);
      CHECK(m.client == client && m.seq == (uint32_t)(seq - kWindow));
      echo_sum = fnv1a(echo_sum, echo, (size_t)n);
    }
    sleep_ms(delay / 4);
  }
  struct Message done = {client, 0, echo_sum};
  ssize_t sent = client == 0 ? send(s, &done, sizeof done, 0)
                             : sendto(s, &done, sizeof done, 0, (const struct sockaddr *)&server->storage, server->len);
  CHECK(sent == (ssize_t)sizeof done);
  _exit(0);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: datagram_peers udp4|udp6|unix|abstract [STEPS] [DELAY_MS]\n");
    return 2;
  }
  g_kind = argv[1];
  g_server_pid = (int)getpid();
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 30);
  struct Address server = name_for('s');
  int s = bound_socket(&server);
  pid_t clients[kClients];
  for (uint32_t c = 0; c < kClients; c++) {
    clients[c] = fork();
    CHECK(clients[c] >= 0);
    if (clients[c] == 0) run_client(c, &server, steps, delay);
  }
  uint64_t received_sum[kClients], echo_sum[kClients];
  uint32_t next_seq[kClients], done = 0;
  long received = 0;
  for (uint32_t c = 0; c < kClients; c++) received_sum[c] = FNV_INIT, echo_sum[c] = 0, next_seq[c] = 1;
  char buf[kMaxDatagram];
  while (done < kClients) {
    struct Address from;
    ssize_t n = receive(s, buf, &from);
    struct Message m;
    CHECK(n >= (ssize_t)sizeof m);
    memcpy(&m, buf, sizeof m);
    CHECK(m.client < kClients);
    if (m.seq == 0) {
      echo_sum[m.client] = m.sum;
      done++;
      continue;
    }
    CHECK(m.seq == next_seq[m.client]); /* nothing lost, repeated or reordered */
    next_seq[m.client]++;
    received_sum[m.client] = fnv1a(received_sum[m.client], buf, (size_t)n);
    CHECK(sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from.storage, from.len) == n);
    if (++received % 8 == 0) printf("step %ld: %ld datagrams echoed\n", received / 8, received);
    sleep_ms(delay);
  }
  for (uint32_t c = 0; c < kClients; c++) {
    int status = 0;
    CHECK(waitpid(clients[c], &status, 0) == clients[c]);
    printf("client %u: server received %u datagrams, sum %llu; client's echo sum %llu; exit %d\n", c,
           next_seq[c] - 1, (unsigned long long)received_sum[c], (unsigned long long)echo_sum[c],
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  if (family() == AF_UNIX && strcmp(g_kind, "unix") == 0) {
    struct Address a = name_for('s');
    unlink(((struct sockaddr_un *)&a.storage)->sun_path);
    a = name_for('0');
    unlink(((struct sockaddr_un *)&a.storage)->sun_path);
  }
  return 0;
}
