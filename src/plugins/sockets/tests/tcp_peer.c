/* tcp_peer: the two ends of one TCP connection, each a process of its own (possibly on two hosts).
 * Each step both ends send a block of 8 KiB derived from (role, step) and read the peer's block
 * of LAG steps before, so about LAG blocks are in flight in each direction at any moment; each
 * end checks every byte it reads and prints a running checksum of the stream.
 * With "again", once the stream is done the client opens a second TCP connection and sends a
 * datagram to the addresses it was given at start, as a program that connects lazily to peers it
 * learnt before a checkpoint, and both print the addresses these show them: after a restart on
 * other hosts the program must still reach its peer there and see the old addresses.
 * usage: tcp_peer server PORT STEPS DELAY_MS [again]
 *        tcp_peer client HOST PORT STEPS DELAY_MS [again]   (retries the connection for 20 s) */
#include "target_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

enum { kBlock = 8192, kLag = 4 };

static void fill_block(unsigned char *block, int role, long step) {
  uint64_t seed = ((uint64_t)role << 32) ^ (uint64_t)step;
  for (size_t i = 0; i < kBlock; i += 8) {
    uint64_t v = splitmix64(&seed);
    memcpy(block + i, &v, 8);
  }
}

static const char *address_text(const struct sockaddr_in *address, char *out) {
  return inet_ntop(AF_INET, &address->sin_addr, out, INET_ADDRSTRLEN);
}

static int connect_retrying(const struct sockaddr_in *address, int type) {
  for (int tries = 0;; tries++) {
    int fd = socket(AF_INET, type, 0);
    CHECK(fd >= 0);
    if (connect(fd, (const struct sockaddr *)address, sizeof *address) == 0) return fd;
    CHECK(tries < 400);
    close(fd);
    sleep_ms(50);
  }
}

/* The second meeting ("again"): a new connection through the server's listener and a datagram
 * each way, with the addresses each side is shown. */
static void server_again(int listener, int udp) {
  struct sockaddr_in from;
  socklen_t len = sizeof from;
  char text[INET_ADDRSTRLEN], token[4];
  int fd = accept(listener, (struct sockaddr *)&from, &len);
  CHECK(fd >= 0);
  transfer_all(fd, token, sizeof token, 0);
  transfer_all(fd, token, sizeof token, 1);
  printf("server accepted again from %s\n", address_text(&from, text));
  close(fd);
  char datagram[16];
  len = sizeof from;
  ssize_t n = recvfrom(udp, datagram, sizeof datagram, 0, (struct sockaddr *)&from, &len);
  CHECK(n > 0);
  printf("server got datagram \"%.*s\" from %s\n", (int)n, datagram, address_text(&from, text));
  CHECK(sendto(udp, "pong", 4, 0, (struct sockaddr *)&from, len) == 4);
}

static void client_again(struct sockaddr_in server) {
  char text[INET_ADDRSTRLEN], token[4] = {'t', 'o', 'k', 'n'};
  int fd = connect_retrying(&server, SOCK_STREAM);
  transfer_all(fd, token, sizeof token, 1);
  transfer_all(fd, token, sizeof token, 0);
  struct sockaddr_in own, peer;
  socklen_t own_len = sizeof own, peer_len = sizeof peer;
  CHECK(getsockname(fd, (struct sockaddr *)&own, &own_len) == 0 && getpeername(fd, (struct sockaddr *)&peer, &peer_len) == 0);
  printf("client connected again as %s", address_text(&own, text));
  printf(" to %s port %d\n", address_text(&peer, text), ntohs(peer.sin_port));
  close(fd);
  int udp = socket(AF_INET, SOCK_DGRAM, 0);
  struct timeval wait = {.tv_sec = 2, .tv_usec = 0};
  CHECK(udp >= 0 && setsockopt(udp, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait) == 0);
  server.sin_port = htons((uint16_t)(ntohs(server.sin_port) + 1));
  char reply[16];
  struct sockaddr_in from;
  socklen_t len;
  ssize_t n;
  for (int tries = 0;; tries++) {  /* a datagram may be lost; the server answers each one it gets */
    CHECK(tries < 10 && sendto(udp, "ping", 4, 0, (struct sockaddr *)&server, sizeof server) == 4);
    len = sizeof from;
    n = recvfrom(udp, reply, sizeof reply, 0, (struct sockaddr *)&from, &len);
    if (n > 0) break;
  }
  printf("client got datagram \"%.*s\" from %s port %d\n", (int)n, reply, address_text(&from, text), ntohs(from.sin_port));
  close(udp);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  int server = argc > 1 && strcmp(argv[1], "server") == 0;
  int args = server ? 5 : 6;
  CHECK(argc == args || (argc == args + 1 && strcmp(argv[args], "again") == 0));
  int again = argc == args + 1;
  long steps = atol(argv[server ? 3 : 4]), delay = atol(argv[server ? 4 : 5]);
  int port = atoi(argv[server ? 2 : 3]);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  int fd, listener = -1, udp = -1;
  if (server) {
    int one = 1;
    listener = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener >= 0 && setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    CHECK(bind(listener, (struct sockaddr *)&address, sizeof address) == 0 && listen(listener, 1) == 0);
    if (again) {
      struct sockaddr_in udp_address = address;
      udp_address.sin_port = htons((uint16_t)(port + 1));
      udp = socket(AF_INET, SOCK_DGRAM, 0);
      CHECK(udp >= 0 && bind(udp, (struct sockaddr *)&udp_address, sizeof udp_address) == 0);
    }
    fd = accept(listener, NULL, NULL);
    CHECK(fd >= 0);
    if (!again) close(listener);
  } else {
    CHECK(inet_pton(AF_INET, argv[2], &address.sin_addr) == 1);
    fd = connect_retrying(&address, SOCK_STREAM);
  }
  const char *name = server ? "server" : "client";
  int role = server ? 1 : 2, peer_role = server ? 2 : 1;
  static unsigned char out[kBlock], in[kBlock], expected[kBlock];
  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps + kLag; step++) {
    if (step <= steps) {
      fill_block(out, role, step);
      transfer_all(fd, out, kBlock, 1);
    }
    if (step > kLag) {
      transfer_all(fd, in, kBlock, 0);
      fill_block(expected, peer_role, step - kLag);
      CHECK(memcmp(in, expected, kBlock) == 0);
      sum = fnv1a(sum, in, kBlock);
    }
    if (step <= steps) {
      printf("%s step %ld sum %016llx\n", name, step, (unsigned long long)sum);
      sleep_ms(delay);
    }
  }
  printf("%s done sum %016llx\n", name, (unsigned long long)sum);
  /* What the connection's ends are called, as before any restart (the client's port is the
   * kernel's choice, so not printed). */
  struct sockaddr_in own, peer;
  socklen_t own_len = sizeof own, peer_len = sizeof peer;
  CHECK(getsockname(fd, (struct sockaddr *)&own, &own_len) == 0 && getpeername(fd, (struct sockaddr *)&peer, &peer_len) == 0);
  char own_text[INET_ADDRSTRLEN], peer_text[INET_ADDRSTRLEN];
  address_text(&own, own_text);
  address_text(&peer, peer_text);
  if (server)
    printf("server is %s port %d, its peer %s\n", own_text, ntohs(own.sin_port), peer_text);
  else
    printf("client is %s, its peer %s port %d\n", own_text, peer_text, ntohs(peer.sin_port));
  close(fd);
  if (again && server) server_again(listener, udp);
  if (again && !server) client_again(address);
  return 0;
}
