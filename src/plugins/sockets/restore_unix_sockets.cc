// Unix sockets at restart. Connected ends are made once, before the process tree is forked, as
// socketpairs of their type with both ends paired as they were (by the inodes sock_diag named at
// the checkpoint), refilled with what was queued at each end, then shut down as they were. A
// process then gets its end (also in processes forked after, which inherit them). A connection
// made through a listener comes back as such a pair too: the same bytes, without the names
// getsockname/getpeername showed. Listeners are bound to their name again. TCP:
// restore_tcp.cc; datagram sockets (UDP, named Unix datagram sockets): restore_datagrams.cc.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace std::string_literals;

#include <poll.h>

#include <chrono>
#include <thread>

#include "cli/coord_client.h"
#include "common/error.h"
#include "plugins/sockets/records.h"
#include "plugins/sockets/socket_restore.h"

namespace stasis::restore {
using namespace socket_restore;
namespace socket_restore {

std::map<uint64_t, int> g_ends;  // saved inode of an end -> its new socket (restart's own, lifted)

struct EndUse {
  const image::Image* img;
  const StasisFdRecord* rec;
};

// `send_flags`: MSG_DONTWAIT where the bytes must fit at once (a socketpair nobody reads yet).
void send_back(int writer, const StasisFdRecord& rec, const char* data, size_t len, int send_flags) {
  for (size_t done = 0; done < len;) {
    ssize_t n = send(writer, data + done, len - done, send_flags | MSG_NOSIGNAL);
    if (n <= 0)
      throw Error(fmt::format("cannot put {} bytes back into the socket of descriptor {} (only {} fit)",
                              len, rec.fd, done));
    done += static_cast<size_t>(n);
  }
}

// What was queued for reading at the end `rec` (of `img`) goes in through its peer, `writer`:
// a stream's bytes, or a datagram/seqpacket queue message by message.
void refill(int writer, const image::Image& img, const StasisFdRecord& rec, int send_flags) {
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES)) {
    std::vector<char> bytes = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES);
    send_back(writer, rec, bytes.data(), bytes.size(), send_flags);
  }
  if (!img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_MESSAGES)) return;
  std::vector<char> messages = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_MESSAGES);
  for (size_t at_byte = 0; at_byte < messages.size();) {
    uint32_t len = 0;
    if (messages.size() - at_byte < sizeof len) throw Error(fmt::format("{}: damaged socket messages", img.path()));
    std::memcpy(&len, messages.data() + at_byte, sizeof len);
    at_byte += sizeof len;
    if (messages.size() - at_byte < len) throw Error(fmt::format("{}: damaged socket messages", img.path()));
    send_back(writer, rec, messages.data() + at_byte, len, send_flags);  // one message, its boundary kept
    at_byte += len;
  }
}

uint16_t port_of(const struct sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET ? reinterpret_cast<const struct sockaddr_in&>(address).sin_port
                                            : reinterpret_cast<const struct sockaddr_in6&>(address).sin6_port);
}

void apply_options(int end, const StasisFdRecord& rec) {
  const auto end_data = kind_data_of<StasisUnixSocketData>(rec);
  int sndbuf = static_cast<int>(end_data.send_buffer) / 2, rcvbuf = static_cast<int>(end_data.receive_buffer) / 2;
  int passcred = static_cast<int>(end_data.passcred);
  // The kernel reports twice what was set (bookkeeping overhead): set half to get it back.
  if (sndbuf > 0) setsockopt(end, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (rcvbuf > 0) setsockopt(end, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (passcred) setsockopt(end, SOL_SOCKET, SO_PASSCRED, &passcred, sizeof passcred);
}

}  // namespace

void create_socket_pairs(const std::vector<image::Image>& images) {
  std::map<uint64_t, EndUse> ends;  // one use of each saved end, preferring the one with its bytes
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != STASIS_FD_UNIX_SOCKET) continue;
      auto [it, fresh] = ends.emplace(f.ino, EndUse{&img, &f});
      if (!fresh && (img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_BYTES) ||
                     img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_MESSAGES)))
        it->second = {&img, &f};
    }
  std::vector<std::pair<int, const StasisFdRecord*>> made;
  for (const auto& [ino, use] : ends) {
    if (g_ends.count(ino)) continue;  // made with its peer
    const auto saved = kind_data_of<StasisUnixSocketData>(*use.rec);
    uint64_t peer_ino = saved.peer_ino;
    auto peer = peer_ino ? ends.find(peer_ino) : ends.end();
    int pair[2];
    int type = static_cast<int>(saved.type);
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair) != 0)
      throw Error(fmt::format("cannot create a socketpair for descriptor {}: {}", use.rec->fd,
                              std::strerror(errno)));
    apply_options(pair[0], *use.rec);
    if (peer != ends.end()) apply_options(pair[1], *peer->second.rec);
    refill(pair[1], *use.img, *use.rec, MSG_DONTWAIT);  // bytes queued at this end were sent by the peer
    if (peer != ends.end()) refill(pair[0], *peer->second.img, *peer->second.rec, MSG_DONTWAIT);
    g_ends[ino] = lift_descriptor(pair[0]);
    made.emplace_back(g_ends[ino], use.rec);
    if (peer != ends.end()) {
      g_ends[peer_ino] = lift_descriptor(pair[1]);
      made.emplace_back(g_ends[peer_ino], peer->second.rec);
      continue;
    }
    // The peer is gone (closed before the checkpoint) or was never part of the computation: the
    // end reads what was queued, then end of file, as it would have.
    if (peer_ino != 0)
      fmt::print(stderr, "stasis restart: {}: descriptor {} is a Unix socket whose peer was not part "
                 "of the computation; after restart it reads as closed by the peer\n",
                 use.img->path(), use.rec->fd);
    close(pair[1]);
  }
  for (const auto& [end, rec] : made) {  // after every refill: a shut-down sender takes no bytes
    const uint64_t shut = kind_data_of<StasisUnixSocketData>(*rec).shutdown;
    if (shut & 1) shutdown(end, SHUT_RD);
    if (shut & 2) shutdown(end, SHUT_WR);
  }
}

namespace socket_restore {

// A process's own descriptor of a socket restart made (`made`: saved inode -> restart's socket).
int open_made_socket(const std::map<uint64_t, int>& made, const image::Image& img, const StasisFdRecord& rec,
                     const char* what) {
  auto socket_fd = made.find(rec.ino);
  if (socket_fd == made.end())
    throw Error(fmt::format("{}: descriptor {} is a {} that restart did not recreate", img.path(), rec.fd, what));
  int fd = fcntl(socket_fd->second, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot open the {} of descriptor {}", what, rec.fd));
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_ASYNC));
  return fd;
}

}  // namespace

int open_socket_end(const image::Image& img, const StasisFdRecord& rec) {
  return open_made_socket(g_ends, img, rec, "Unix socket end");
}

namespace socket_restore {

// A Unix socket's name as saved ("/path", "relative", "@abstract") as an address. A relative name
// was bound in the program's working directory (restart runs elsewhere). 0: no usable name.
socklen_t unix_address(const image::Image& img, const std::string& saved, struct sockaddr_un* out) {
  *out = {};
  out->sun_family = AF_UNIX;
  std::string name = saved.empty() || saved[0] == '/' || saved[0] == '@' ? saved
                                                                         : fmt::format("{}/{}", img.process().cwd, saved);
  if (name.empty() || name.size() >= sizeof out->sun_path) return 0;
  std::memcpy(out->sun_path, name.data(), name.size());
  if (name[0] == '@') out->sun_path[0] = 0;
  return static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + name.size());
}

// Binds `fd` to the saved name again. The killed run left its socket file behind: it is
// replaced, and only it.
void bind_unix_name(int fd, const image::Image& img, const StasisFdRecord& rec, const char* what) {
  struct sockaddr_un address;
  socklen_t len = unix_address(img, rec.path, &address);
  if (len == 0)
    throw Error(fmt::format("{}: descriptor {} is a {} without a usable name", img.path(), rec.fd, what));
  struct stat st;
  if (address.sun_path[0] && lstat(address.sun_path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw Error(fmt::format("{} (the name of {} {}) is now something else than a socket; remove it to "
                              "restart", rec.path, what, rec.fd));
    unlink(address.sun_path);
  }
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0)
    throw Error(fmt::format("cannot bind {} again (descriptor {}, a {}): {}", rec.path, rec.fd, what,
                            std::strerror(errno)));
}

}  // namespace

int open_unix_listener(const image::Image& img, const StasisFdRecord& rec) {
  const auto listener = kind_data_of<StasisUnixListenerData>(rec);
  int fd = socket(AF_UNIX, static_cast<int>(listener.type) | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a Unix socket: {}", std::strerror(errno)));
  bind_unix_name(fd, img, rec, "listening Unix socket");
  if (listen(fd, static_cast<int>(listener.backlog)) != 0)
    throw Error(fmt::format("cannot listen on {} again (descriptor {}): {}", rec.path, rec.fd,
                            std::strerror(errno)));
  int passcred = static_cast<int>(listener.passcred);
  if (passcred) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &passcred, sizeof passcred);
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_ASYNC));
  return fd;
}

}  // namespace stasis::restore

