// Stand-in processes for bench/relay_scale.py: many "processes" of a computation in one program,
// each a connection that joins (HMAC handshake, as the runtime does) and answers every barrier
// at once, writing a small image at "checkpoint" as the coordinator checks at commit. They join
// host relays (abstract Unix sockets PREFIX-FIRST .. PREFIX-FIRST+RELAYS-1), or with RELAYS = 0
// the coordinator itself over TCP, as every process did before relays.
//
// build: g++ -O2 -std=gnu++20 -Isrc bench/relay_standins.cc build/src/common/libstasis_common.a
// usage: relay_standins PORT SECRET_HEX PREFIX FIRST RELAYS PER_RELAY
// Prints "ready N" once all N have joined, then serves until every connection is closed.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/hmac.h"
#include "image/framing.h"
#include "protocol/wire.h"

namespace {

int connect_relay(const std::string& name) {
  int fd = stasis_connect_abstract(name.c_str());
  if (fd < 0) {
    perror(name.c_str());
    exit(1);
  }
  return fd;
}

// What the coordinator checks of an image at commit: its size and END record.
uint64_t write_image(const char* path, uint64_t checksum) {
  StasisEndRecord end{};
  end.headers_checksum = checksum;
  StasisRecordHeader header =
      stasis::image::frame_record(STASIS_REC_END, STASIS_COMPRESS_NONE, 0, &end, sizeof end, sizeof end);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, &header, sizeof header) != sizeof header || write(fd, &end, sizeof end) != sizeof end) {
    perror(path);
    exit(1);
  }
  close(fd);
  return sizeof header + sizeof end;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s PORT SECRET_HEX PREFIX FIRST RELAYS PER_RELAY\n", argv[0]);
    return 2;
  }
  uint16_t port = static_cast<uint16_t>(atoi(argv[1]));
  uint8_t secret[32];
  if (stasis_hex_decode(argv[2], secret, sizeof secret) != 0) return 2;
  std::string prefix = argv[3];
  int first = atoi(argv[4]), relays = atoi(argv[5]), per_relay = atoi(argv[6]);
  rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);

  int epoll = epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> numbers;  // the stand-in's number, by descriptor
  int groups = relays == 0 ? 1 : relays;
  int joined = 0;
  for (int group = 0; group < groups; group++) {
    for (int i = 0; i < per_relay; i++) {
      int n = (first + group) * per_relay + i;
      int fd = relays == 0 ? stasis_connect_tcp("127.0.0.1", port)
                           : connect_relay(prefix + "-" + std::to_string(first + group));
      StasisProcessInfo info{};
      info.pid = static_cast<uint32_t>(1000000 + n);
      info.original_pid = info.pid;
      snprintf(info.hostname, sizeof info.hostname, "host%d", first + group);
      snprintf(info.program, sizeof info.program, "s%d", n);
      char reason[256];
      if (fd < 0 || stasis_client_handshake(fd, secret, sizeof secret, STASIS_ROLE_PROCESS, &info,
                                            nullptr, reason, sizeof reason) != 0) {
        fprintf(stderr, "stand-in %d cannot join: %s\n", n, fd < 0 ? strerror(errno) : reason);
        return 1;
      }
      if (static_cast<size_t>(fd) >= numbers.size()) numbers.resize(fd + 1, -1);
      numbers[fd] = n;
      epoll_event event{.events = EPOLLIN, .data = {.fd = fd}};
      epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
      joined++;
    }
  }
  printf("ready %d\n", joined);
  fflush(stdout);

  int open_connections = joined;
  std::vector<epoll_event> events(1024);
  while (open_connections > 0) {
    int ready = epoll_wait(epoll, events.data(), static_cast<int>(events.size()), -1);
    for (int e = 0; e < ready; e++) {
      int fd = events[e].data.fd;
      StasisMsgHeader header;
      StasisBarrier barrier;
      if (stasis_recv_header(fd, &header) != 0) {
        close(fd);
        open_connections--;
        continue;
      }
      if (header.type != STASIS_MSG_BARRIER || header.payload_len != sizeof barrier) {
        stasis_discard(fd, header.payload_len);
        if (header.type == STASIS_MSG_KILL) {
          close(fd);
          open_connections--;
        }
        continue;
      }
      if (stasis_recv_exact(fd, &barrier, sizeof barrier) != 0) continue;
      StasisBarrierDone done{};
      memcpy(done.name, barrier.name, sizeof done.name - 1);
      if (strcmp(barrier.name, "checkpoint") == 0) {
        snprintf(done.image_path, sizeof done.image_path, "%.900s/s%d.stasis", barrier.ckpt_dir,
                 numbers[fd]);
        done.image_bytes = write_image(done.image_path, header.arg);
        done.image_checksum = header.arg;
      }
      if (strcmp(barrier.name, "children") == 0)
        stasis_send_msg(fd, STASIS_MSG_CHILDREN, header.arg, nullptr, 0);
      stasis_send_msg(fd, STASIS_MSG_BARRIER_DONE, header.arg, &done, sizeof done);
    }
  }
  return 0;
}
