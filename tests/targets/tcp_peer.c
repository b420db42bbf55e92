/* tcp_peer: the two ends of one TCP connection, each a process of its own (possibly on two hosts).
 * Each step both ends send a block of 8 KiB derived from (role, step) and read the peer's block
 * of LAG steps before, so about LAG blocks are in flight in each direction at any moment; each
 * end checks every byte it reads and prints a running checksum of the stream.
 * usage: tcp_peer server PORT STEPS DELAY_MS
 *        tcp_peer client HOST PORT STEPS DELAY_MS   (retries the connection for 20 s) */
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

int main(int argc, char **argv) {
  line_buffered_stdout();
  int server = argc > 1 && strcmp(argv[1], "server") == 0;
  CHECK(argc == (server ? 5 : 6));
  long steps = atol(argv[server ? 3 : 4]), delay = atol(argv[server ? 4 : 5]);
  int port = atoi(argv[server ? 2 : 3]);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  int fd;
  if (server) {
    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    CHECK(listener >= 0 && setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    CHECK(bind(listener, (struct sockaddr *)&address, sizeof address) == 0 && listen(listener, 1) == 0);
    fd = accept(listener, NULL, NULL);
    CHECK(fd >= 0);
    close(listener);
  } else {
    CHECK(inet_pton(AF_INET, argv[2], &address.sin_addr) == 1);
    for (int tries = 0;; tries++) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, (struct sockaddr *)&address, sizeof address) == 0) break;
      CHECK(tries < 400);
      close(fd);
      sleep_ms(50);
    }
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
  inet_ntop(AF_INET, &own.sin_addr, own_text, sizeof own_text);
  inet_ntop(AF_INET, &peer.sin_addr, peer_text, sizeof peer_text);
  if (server)
    printf("server is %s port %d, its peer %s\n", own_text, ntohs(own.sin_port), peer_text);
  else
    printf("client is %s, its peer %s port %d\n", own_text, peer_text, ntohs(peer.sin_port));
  close(fd);
  return 0;
}
