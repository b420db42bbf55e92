/* socketpair_tree: a parent and a child talking over a socketpair, with bytes in flight in both
 * directions at any moment: the child writes faster than the parent reads, and reads what the
 * parent wrote only at the end. Both sides checksum the whole stream they received; a restart
 * that loses, duplicates or reorders a byte changes a printed checksum.
 * With TYPE dgram or seqpacket, every write is one message, and message boundaries must survive.
 * usage: socketpair_tree [STEPS=60] [DELAY_MS=40] [stream|dgram|seqpacket] */
#include "target_common.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kPerStep = 64 };

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 40);
  const char *kind = argc > 3 ? argv[3] : "stream";
  int type = strcmp(kind, "dgram") == 0 ? SOCK_DGRAM : strcmp(kind, "seqpacket") == 0 ? SOCK_SEQPACKET : SOCK_STREAM;
  int sv[2];
  CHECK(socketpair(AF_UNIX, type, 0, sv) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    close(sv[0]);
    uint64_t seed = 11;
    for (long step = 1; step <= steps; step++) {
      uint64_t values[kPerStep];
      for (int i = 0; i < kPerStep; i++) values[i] = splitmix64(&seed);
      transfer_all(sv[1], values, sizeof values, 1);
      sleep_ms(delay / 4);
    }
    uint64_t sum = FNV_INIT;
    for (long step = 1; step <= steps; step++) {
      uint64_t values[kPerStep];
      transfer_all(sv[1], values, sizeof values, 0);
      sum = fnv1a(sum, values, sizeof values);
    }
    transfer_all(sv[1], &sum, sizeof sum, 1);
    _exit(0);
  }
  close(sv[1]);
  uint64_t seed = 22, sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    uint64_t out[kPerStep], in[kPerStep];
    for (int i = 0; i < kPerStep; i++) out[i] = splitmix64(&seed);
    transfer_all(sv[0], out, sizeof out, 1);
    transfer_all(sv[0], in, sizeof in, 0);
    sum = fnv1a(sum, in, sizeof in);
    printf("step %ld received %llu\n", step, (unsigned long long)sum);
    sleep_ms(delay);
  }
  uint64_t child_sum = 0;
  transfer_all(sv[0], &child_sum, sizeof child_sum, 0);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  printf("child received %llu exit %d\n", (unsigned long long)child_sum,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
